// A CPU stand-in for the Metal features that wkvbench's own Metal kernels use, so that the same
// .metal source compiles as C++20 (g++ -include metal_emu.h -x c++). Written for wkvbench.
//
// What it provides: the address-space qualifiers (device, threadgroup, constant: erased), uint and
// uint3, metal::exp / metal::min, the float types (half as _Float16, bfloat with round-to-nearest-
// even from float), and threadgroup_barrier as a std::barrier across the OS threads of one
// threadgroup (the driver runs one OS thread per Metal thread and sets `metal_emu::group_barrier`
// in each). What it does not: SIMD-group functions (simd_sum, simd_shuffle_xor) would need the 32
// lanes of a SIMD-group run in lock step; none of our kernels uses them (docs/metal.md). It checks
// a kernel's indexing, synchronization and arithmetic, not Apple's compiler or its rounding modes.
#pragma once

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>

#define device
#define threadgroup
#define constant const
#define kernel

using uint = unsigned int;
struct uint3 {
  uint x, y, z;
};

using half = _Float16;

struct bfloat {
  uint16_t bits;
  bfloat() = default;
  bfloat(float f) {  // NOLINT: implicit, as Metal's conversions
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // a quiet NaN stays NaN
    } else {
      bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

namespace metal {
using std::exp;
template <typename X>
inline X min(X a, X b) { return b < a ? b : a; }
template <typename X>
inline X max(X a, X b) { return a < b ? b : a; }
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
}  // namespace metal
using namespace metal;

namespace metal_emu {
inline thread_local std::barrier<>* group_barrier = nullptr;
}

inline void threadgroup_barrier(metal::mem_flags) { metal_emu::group_barrier->arrive_and_wait(); }
