"""The CUDA backend: the cuda plugin's PTX, read and launched through the NVIDIA driver."""
