"""The HIP backend: the architecture plugins' code objects, read and launched through the
user's HIP runtime."""
