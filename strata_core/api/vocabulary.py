"""The run context's vocabulary: OS names, KV types, the engine's own packs (AMD_HIP.md:
"native IQ packs"), then the GGUF formats, and the picture readers (strata_core.plan.pictures).
Plain tuples, so that the command line's parser imports nothing to offer them."""

OS_NAMES = ("linux", "windows")
KV_TYPES = ("int8", "f16", "bf16")
NATIVE_PACKS = ("IQ3_S", "IQ3_XXS", "Q2_0", "IQ2_XS", "IQ2_S", "IQ1_M", "IQ4_XS", "UD-IQ4_XS")
GGUF_PACKS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_0", "Q5_1")
PACKS = NATIVE_PACKS + GGUF_PACKS
READERS = ("gpu", "cpu")
