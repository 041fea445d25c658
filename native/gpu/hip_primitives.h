// The hardware primitives of the kernels for AMD GPUs, with clang's AMDGPU builtins: the
// kernel attributes, ids and the grid's size, the block barrier, the device fence, the logical
// warp's butterfly shuffle, e^x and the int8 dot4 (strata_kernels.hip includes it for every
// AMD target).
#define KERNEL                                                                              \
  extern "C" __attribute__((global))                                                        \
  __attribute__((amdgpu_flat_work_group_size(STRATA_BLOCK, STRATA_BLOCK)))
// On NVIDIA the kernel's registers are capped so that `blocks` workgroups fit on an SM at once;
// here it is a kernel as any other.
#define KERNEL_RESIDENT(blocks) KERNEL
#define DEVICE static __attribute__((device)) inline
#define SHARED __attribute__((shared))
#define EXPORTED_DATA extern "C" __attribute__((device)) const

// HIP has no programmatic dependent launch: a kernel starts once the one before it ended.
DEVICE void grid_handover() {}

#if defined(__GFX11__) || defined(__GFX12__)
#define STRATA_DOT4_IU8 1
#elif !defined(__GFX9__) && !defined(__GFX10__)
#error "strata's HIP kernels target gfx906, gfx10, gfx11 and gfx12"
#endif

DEVICE unsigned thread_id() { return __builtin_amdgcn_workitem_id_x(); }
DEVICE unsigned block_id() { return __builtin_amdgcn_workgroup_id_x(); }
DEVICE unsigned grid_size() { return __builtin_amdgcn_grid_size_x() / STRATA_BLOCK; }

DEVICE void sync_block() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// Orders this thread's memory accesses before and after it for the whole device.
DEVICE void fence_device() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }

// Lane l of a logical warp reads lane l ^ mask of the same warp. ds_bpermute addresses the
// hardware wavefront; mask < 32 keeps a wave64 read inside its own 32-lane half.
DEVICE int warp_xor(int value, int mask) {
  unsigned lane = __builtin_amdgcn_mbcnt_lo(~0u, 0u);
#if defined(__GFX9__)
  lane = __builtin_amdgcn_mbcnt_hi(~0u, lane);
#endif
  return __builtin_amdgcn_ds_bpermute((int)((lane ^ mask) << 2), value);
}

DEVICE float exp_f32(float x) { return __builtin_expf(x); }

DEVICE int dot4(int a, int b, int acc) {
#if STRATA_DOT4_IU8
  return __builtin_amdgcn_sudot4(true, a, true, b, acc, false);
#else
  return __builtin_amdgcn_sdot4(a, b, acc, false);
#endif
}
