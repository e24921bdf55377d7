// The GDN WY stage of the chunked gated delta rule (operator gdn_wy, spec §5.2), for Metal.
// Written for wkvbench from the math; no third-party kernel code.
//
// For every chunk c of BT tokens (t0 = c*BT, L = min(BT, T - t0) valid rows), head h and batch b:
//
//     u[t0+i, :] = sum_{j<L} A[t0+i, j] * rnd(beta[t0+j] * v[t0+j, :])
//     w[t0+i, :] = sum_{j<L} A[t0+i, j] * rnd(beta[t0+j] * exp(gc[t0+j]) * k[t0+j, :])
//
// where rnd() rounds to the input type T (the scaled right-hand sides are stored in T before the
// product, as FLA's recompute_w_u_fwd does), products accumulate in float and the results are
// stored in T. gc is the chunk-local inclusive cumsum of the natural-log gate (float).
//
// Layouts (C order, innermost last): k [B,T,H,K], v [B,T,H,V], beta and gc [B,T,H], A [B,T,H,BT]
// (row t holds row t - t0 of its chunk's BT x BT matrix), w [B,T,H,K], u [B,T,H,V].
//
// Threading: one threadgroup per (chunk, head, batch) = threadgroup_position_in_grid (x, y, z);
// `nthreads` threads per group. The threads first stage the chunk's two per-row coefficients
// beta and beta*exp(gc) in threadgroup memory (coef_v, coef_k: BT floats each), meet at a barrier,
// then each computes the output entries (row, column) of its stride: L*(V+K) of them.
//
// This file holds the kernel as a function template; the kernel entry that declares the
// threadgroup arrays and passes the thread coordinates is MLX's generated one on a Mac
// (wkvkernels/gdn_wy/metal_mlx.py) and the emulation driver on a CPU (metal/emu_driver.cpp).

template <typename T>
inline void gdn_wy_recompute_w_u(
    const device T* k, const device T* v, const device T* beta, const device T* A,
    const device float* gc, device T* w, device T* u,
    threadgroup float* coef_v, threadgroup float* coef_k,
    const uint T_len, const uint H, const uint K, const uint V, const uint BT,
    const uint3 group, const uint tid, const uint nthreads) {
  const uint c = group.x, h = group.y, b = group.z;
  const uint t0 = c * BT;
  if (t0 >= T_len) {
    return;  // every thread of the group returns here: no barrier is left waiting
  }
  const uint L = min(BT, T_len - t0);
  const uint row0 = b * T_len + t0;  // the chunk's first token, counted over [B, T]

  // 1. the per-row coefficients, in float
  for (uint j = tid; j < L; j += nthreads) {
    const uint g = (row0 + j) * H + h;  // index into [B, T, H]
    const float bj = static_cast<float>(beta[g]);
    coef_v[j] = bj;
    coef_k[j] = bj * metal::exp(gc[g]);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  // 2. u (L x V entries), then w (L x K entries), one entry per step of each thread
  const uint nu = L * V, nw = L * K;
  for (uint e = tid; e < nu + nw; e += nthreads) {
    const bool is_u = e < nu;
    const uint N = is_u ? V : K;
    const uint i = (is_u ? e : e - nu) / N;
    const uint col = (is_u ? e : e - nu) % N;
    const device T* x = is_u ? v : k;
    const threadgroup float* coef = is_u ? coef_v : coef_k;
    const device T* a_row = A + ((row0 + i) * H + h) * BT;
    float acc = 0.0f;
    for (uint j = 0; j < L; ++j) {
      const float xj = static_cast<float>(x[((row0 + j) * H + h) * N + col]);
      const float rhs = static_cast<float>(static_cast<T>(coef[j] * xj));
      acc += static_cast<float>(a_row[j]) * rhs;
    }
    device T* out = is_u ? u : w;
    out[((row0 + i) * H + h) * N + col] = static_cast<T>(acc);
  }
}
