"""Where committed media lives: a content-addressed blob store and a SQL catalog."""
