"""Deterministic orchestration: no I/O, no settings, no clocks beyond Temporal's."""
