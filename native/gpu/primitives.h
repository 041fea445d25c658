// What every kernel builds on the vendor's primitives (hip_primitives.h, cuda_primitives.h or
// the tests' emulation): the lane in the logical warp, shuffles of floats and unsigned values,
// the warp maximum and minimum where the vendor has no instruction for them, and scores as
// order keys.

DEVICE unsigned warp_lane() { return thread_id() % WARP; }

DEVICE float warp_xor(float value, int mask) {
  return __builtin_bit_cast(float, warp_xor(__builtin_bit_cast(int, value), mask));
}
DEVICE unsigned warp_xor(unsigned value, int mask) {
  return (unsigned)warp_xor((int)value, mask);
}

#ifndef __NVPTX__
// The largest and the smallest value over a logical warp (NVIDIA has an instruction for each).
DEVICE unsigned warp_max(unsigned value) {
  for (int mask = WARP / 2; mask > 0; mask /= 2) {
    unsigned other = warp_xor(value, mask);
    value = other > value ? other : value;
  }
  return value;
}
DEVICE unsigned warp_min(unsigned value) {
  for (int mask = WARP / 2; mask > 0; mask /= 2) {
    unsigned other = warp_xor(value, mask);
    value = other < value ? other : value;
  }
  return value;
}
#endif

// Scores as unsigned keys whose order is the float order; NaN ranks as -inf (and comes back
// from value_of as -inf), -0 as +0.
DEVICE unsigned order_key(float value) {
  if (value != value) value = -__builtin_inff();
  unsigned bits = value == 0.0f ? 0u : __builtin_bit_cast(unsigned, value);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

DEVICE float value_of(unsigned key) {
  unsigned bits = (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
  return __builtin_bit_cast(float, bits);
}

// (key, id) before (key', id'): larger key first, then the lower id.
DEVICE bool ranks_before(unsigned key, int id, unsigned other_key, int other_id) {
  return key > other_key || (key == other_key && id < other_id);
}
