"""Thin Temporal activities over the domain core in ``trawl/``."""
