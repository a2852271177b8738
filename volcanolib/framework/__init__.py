"""The scheduling framework: sessions, statements, hooks, configuration and plugin discovery."""
