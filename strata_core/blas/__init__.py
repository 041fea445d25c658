"""The vendor BLAS libraries the prompt GEMMs run through on a card (AMD_HIP.md, "Tuning
table", "rocBLAS table"): cuBLASLt on NVIDIA cards, hipBLASLt and rocBLAS on AMD cards, each
bound through cffi in ABI mode and loaded only from the paths the plan names."""
