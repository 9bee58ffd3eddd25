"""Worker processes: wiring only."""
