"""The built-in host (CPU) backend."""
