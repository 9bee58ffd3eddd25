"""Clients of Temporal: the ``trawl`` command and (later) the HTTP API."""
