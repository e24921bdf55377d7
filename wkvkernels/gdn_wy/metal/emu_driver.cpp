// The CPU driver of recompute_w_u.metal under metal_emu.h: what a Metal dispatch does, written out.
// Every threadgroup of the grid (chunk, head, batch) runs in turn; inside one, `nthreads` OS threads
// each run the kernel function as one Metal thread, sharing the group's threadgroup memory and one
// std::barrier. Built with the kernel source by wkvkernels/_metal_emu.py (g++ -std=c++20).
#include <thread>
#include <vector>

template <typename T>
static void dispatch(const T* k, const T* v, const T* beta, const T* A, const float* gc, T* w, T* u,
                     uint B, uint T_len, uint H, uint K, uint V, uint BT, uint nthreads) {
  const uint NT = (T_len + BT - 1) / BT;
  std::vector<float> coef_v(BT), coef_k(BT);
  for (uint b = 0; b < B; ++b) {
    for (uint h = 0; h < H; ++h) {
      for (uint c = 0; c < NT; ++c) {
        std::barrier<> bar(static_cast<std::ptrdiff_t>(nthreads));
        std::vector<std::thread> threads;
        threads.reserve(nthreads);
        for (uint tid = 0; tid < nthreads; ++tid) {
          threads.emplace_back([&, tid] {
            metal_emu::group_barrier = &bar;
            gdn_wy_recompute_w_u<T>(k, v, beta, A, gc, w, u, coef_v.data(), coef_k.data(), T_len, H, K,
                                    V, BT, uint3{c, h, b}, tid, nthreads);
          });
        }
        for (auto& t : threads) t.join();
      }
    }
  }
}

#define WKV_GDN_WY_ENTRY(NAME, TYPE)                                                                 \
  extern "C" void NAME(const void* k, const void* v, const void* beta, const void* A, const float* gc, \
                       void* w, void* u, uint B, uint T_len, uint H, uint K, uint V, uint BT,          \
                       uint nthreads) {                                                              \
    dispatch<TYPE>(static_cast<const TYPE*>(k), static_cast<const TYPE*>(v),                         \
                   static_cast<const TYPE*>(beta), static_cast<const TYPE*>(A), gc,                  \
                   static_cast<TYPE*>(w), static_cast<TYPE*>(u), B, T_len, H, K, V, BT, nthreads);   \
  }

WKV_GDN_WY_ENTRY(gdn_wy_recompute_w_u_fp32, float)
WKV_GDN_WY_ENTRY(gdn_wy_recompute_w_u_fp16, half)
WKV_GDN_WY_ENTRY(gdn_wy_recompute_w_u_bf16, bfloat)
