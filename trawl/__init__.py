"""trawl: a durable media crawler. This package is the domain core and never imports Temporal."""

__version__ = "0.1.0"
