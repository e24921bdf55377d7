// wkvbench's own RWKV-4 WKV kernel (spec §2.1), forward and backward, fp32 and bf16.
//
// Plain CUDA C++: no torch headers. The host launchers at the bottom are `extern "C"`, take raw
// device pointers, sizes and a `cudaStream_t` passed as `void*`, launch asynchronously on that
// stream and return the `cudaError_t` of the launch as an int (0 = success). Python loads the
// shared library with ctypes (wkvkernels/wkv4/wkvbench_cuda.py); wkvkernels/_nvcc.py builds it.
//
// Conventions (spec §9, canonical wkv4): k, v, y are [B, T, C] contiguous in the activation type
// F (float or __nv_bfloat16); w4 = W = -exp(time_decay) < 0 and u are [C] float32; the state
// (a, b, p) is three float32 arrays of [B, C]. Every intermediate is float32; bf16 is only the
// storage of k, v, y (and of gy, gk, gv in the backward), rounded to nearest even on store.
//
// Parallelism: one thread per (batch, channel), a sequential loop over T. At each step the threads
// of a warp read 32 consecutive channels, so every global access is coalesced. Threads whose index
// falls past B*C return before touching memory (the bounds check compute-sanitizer wants).
//
// ---------------------------------------------------------------------------------------------
// Forward: the max-tracking recurrence of spec §2.1, verbatim. An absent initial state (null
// pointers) means a = b = 0, p = -1e38. State in and state out may be the same buffers (each
// thread reads its own entries before it writes them).
//
// ---------------------------------------------------------------------------------------------
// Backward. Write A_t = a_t e^{p_t}, B_t = b_t e^{p_t} for the true (unscaled) sums before token
// t, D_t = B_t + e^{u+k_t}, so y_t = (A_t + e^{u+k_t} v_t) / D_t, A_{t+1} = e^W A_t + e^{k_t} v_t,
// B_{t+1} = e^W B_t + e^{k_t}. The final state is a_T = A_T e^{-p_T}, b_T = B_T e^{-p_T} and
// p_T = max(p_0 + T W, max_i k_i + (T-1-i) W) (the running maximum: piecewise linear; its
// gradient goes to the argument that attains the maximum; a token k_t equal to p_t + W wins the tie).
// Upstream gradients: gy [B,T,C] and optionally ga_T, gb_T, gp_T [B,C].
//
// Adjoints of the sums: lamA_t = dL/dA_t = gy_t / D_t + e^W lamA_{t+1} and
// lamB_t = -gy_t y_t / D_t + e^W lamB_{t+1}, started from lamA_T = ga_T e^{-p_T},
// lamB_T = gb_T e^{-p_T}. Then
//   gv_t = e^{k_t} lamA_{t+1} + gy_t e^{u+k_t} / D_t
//   gk_t = e^{k_t} (v_t lamA_{t+1} + lamB_{t+1}) + gy_t e^{u+k_t} (v_t - y_t) / D_t  [+ gP at argmax]
//   gu   = sum_t gy_t e^{u+k_t} (v_t - y_t) / D_t
//   gW   = sum_t (gy_t / D_t) (A'_t - y_t B'_t) + lamA_T A'_T + lamB_T B'_T + gP * (W-coefficient of p_T)
// with A'_t = dA_t/dW, which obeys A'_{t+1} = e^W (A'_t + A_t), A'_0 = 0 (same for B'), and
// gP = gp_T - ga_T a_T - gb_T b_T the total gradient reaching p_T. The initial state gets
// ga_0 = lamA_0 e^{p_0}, gb_0 = lamB_0 e^{p_0}, gp_0 = ga_0 a_0 + gb_0 b_0 [+ gP if p_0 + T W is
// the maximum].
//
// Algorithm (no compile-time Tmax): one thread per channel makes two sweeps over T.
//   1. Forward sweep: re-runs the forward recurrence and carries A', B' scaled by the same e^{p_t}
//      as a, b (a' <- e1 (a' + a)), so gW and gu are complete at its end; per token it stores
//      m_t = gy_t / d_t, q_t and y_t (d_t = D_t e^{-q_t}, q_t = max(p_t, u + k_t)) in a float32
//      workspace of 3 * B * T * C floats (three [B,T,C] planes: coalesced like k and v).
//   2. Reverse sweep: runs the adjoint recurrence in the same max-tracking form as the forward
//      (lamA = alpha e^{rho}, lamB = beta e^{rho}, rho <- max(rho + W, -q_t)), reading the
//      workspace, and writes gk, gv. Every exponential it takes has a non-positive argument:
//      k_t + (s-1-t) W <= p_s <= q_s for every s > t, so e^{k_t + rho} <= 1, and likewise
//      p_0 + s W <= q_s gives e^{rho + p_0} <= 1.
// Cost: 2 T steps per channel (about 2x the forward's arithmetic), traffic of 5 activation reads,
// 2 activation writes and 6 float32 workspace accesses per element; memory 12 bytes per element
// of workspace. gW and gu are written per (b, c) ([B, C] partial sums); the caller sums over B, so
// the result is deterministic (no atomics).
//
// Accuracy: built without --use_fast_math (see wkvkernels/wkv4/wkvbench_cuda.py): expf is the
// accurate (about 2 ulp) libdevice routine and `/` is IEEE division, so the fp32 result stays
// near float32 round-off; the kernel is memory bound, so the cost is small.

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr float kEmptyP = -1e38f;  // p of the empty state (spec §2.1)
constexpr int kThreads = 128;

__device__ __forceinline__ float ld(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, int64_t i, float x) { p[i] = x; }
__device__ __forceinline__ void st(__nv_bfloat16* p, int64_t i, float x) { p[i] = __float2bfloat16_rn(x); }

template <typename F>
__global__ void __launch_bounds__(kThreads)
wkv4_forward_kernel(int B, int T, int C, const float* __restrict__ w, const float* __restrict__ u,
                    const F* __restrict__ k, const F* __restrict__ v, F* __restrict__ y,
                    const float* aa_in, const float* bb_in, const float* pp_in,
                    float* aa_out, float* bb_out, float* pp_out) {
  const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;  // = b * C + c
  if (idx >= (int64_t)B * C) return;
  const int c = (int)(idx % C);
  const int64_t base = (idx / C) * (int64_t)T * C + c;
  const float W = w[c], U = u[c];
  float a = aa_in ? aa_in[idx] : 0.f;
  float b = bb_in ? bb_in[idx] : 0.f;
  float p = pp_in ? pp_in[idx] : kEmptyP;
  for (int t = 0; t < T; ++t) {
    const int64_t i = base + (int64_t)t * C;
    const float kt = ld(k, i), vt = ld(v, i);
    // output: token t weighted by e^{u + k_t}, the past by the state
    float q = fmaxf(p, U + kt);
    float e1 = expf(p - q), e2 = expf(U + kt - q);
    st(y, i, (e1 * a + e2 * vt) / (e1 * b + e2));
    // state: decay the past by e^W, add token t with weight e^{k_t}
    q = fmaxf(p + W, kt);
    e1 = expf(p + W - q);
    e2 = expf(kt - q);
    a = e1 * a + e2 * vt;
    b = e1 * b + e2;
    p = q;
  }
  if (aa_out) aa_out[idx] = a;
  if (bb_out) bb_out[idx] = b;
  if (pp_out) pp_out[idx] = p;
}

template <typename F>
__global__ void __launch_bounds__(kThreads)
wkv4_backward_kernel(int B, int T, int C, const float* __restrict__ w, const float* __restrict__ u,
                     const F* __restrict__ k, const F* __restrict__ v,
                     const float* __restrict__ aa0, const float* __restrict__ bb0,
                     const float* __restrict__ pp0, const F* __restrict__ gy,
                     const float* __restrict__ gaaT, const float* __restrict__ gbbT,
                     const float* __restrict__ gppT, F* __restrict__ gk, F* __restrict__ gv,
                     float* __restrict__ gw_part, float* __restrict__ gu_part,
                     float* __restrict__ gaa0, float* __restrict__ gbb0, float* __restrict__ gpp0,
                     float* __restrict__ ws) {
  const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (int64_t)B * C) return;
  const int c = (int)(idx % C);
  const int64_t base = (idx / C) * (int64_t)T * C + c;
  const int64_t plane = (int64_t)B * T * C;
  float* ws_m = ws;              // gy_t / d_t
  float* ws_q = ws + plane;      // q_t = max(p_t, u + k_t)
  float* ws_y = ws + 2 * plane;  // y_t in float32
  const float W = w[c], U = u[c];
  const float a0 = aa0 ? aa0[idx] : 0.f, b0 = bb0 ? bb0[idx] : 0.f, p0 = pp0 ? pp0[idx] : kEmptyP;

  // ---- sweep 1: forward, with the W-derivatives of the sums (scaled like a, b) ----
  float a = a0, b = b0, p = p0, da = 0.f, db = 0.f, gW = 0.f, gU = 0.f;
  int argmax = -1;  // token whose k_t attains p_T; -1: the initial p_0
  for (int t = 0; t < T; ++t) {
    const int64_t i = base + (int64_t)t * C;
    const float kt = ld(k, i), vt = ld(v, i), gt = ld(gy, i);
    const float q = fmaxf(p, U + kt);
    const float e1 = expf(p - q), e2 = expf(U + kt - q);
    const float d = e1 * b + e2;
    const float yt = (e1 * a + e2 * vt) / d;
    const float m = gt / d;
    ws_m[i] = m;
    ws_q[i] = q;
    ws_y[i] = yt;
    gW += m * e1 * (da - yt * db);
    gU += m * e2 * (vt - yt);
    const float pw = p + W;
    const float q2 = fmaxf(pw, kt);
    if (kt >= pw) argmax = t;
    const float f1 = expf(pw - q2), f2 = expf(kt - q2);
    da = f1 * (da + a);
    db = f1 * (db + b);
    a = f1 * a + f2 * vt;
    b = f1 * b + f2;
    p = q2;
  }
  const float gaT = gaaT ? gaaT[idx] : 0.f, gbT = gbbT ? gbbT[idx] : 0.f, gpT = gppT ? gppT[idx] : 0.f;
  const float gP = gpT - gaT * a - gbT * b;  // everything that reaches p_T
  gW += gaT * da + gbT * db + gP * (float)(argmax < 0 ? T : T - 1 - argmax);
  gw_part[idx] = gW;
  gu_part[idx] = gU;

  // ---- sweep 2: reverse, adjoints lamA = alpha e^rho, lamB = beta e^rho ----
  float alpha = gaT, beta = gbT, rho = -p;  // lam_T = g{a,b}_T e^{-p_T}
  for (int t = T - 1; t >= 0; --t) {
    const int64_t i = base + (int64_t)t * C;
    const float kt = ld(k, i), vt = ld(v, i);
    const float m = ws_m[i], q = ws_q[i], yt = ws_y[i];
    const float ek = expf(kt + rho);     // e^{k_t} times the scale of lam_{t+1}
    const float dir = m * expf(U + kt - q);  // gy_t e^{u+k_t} / D_t
    float gkt = ek * (vt * alpha + beta) + dir * (vt - yt);
    if (t == argmax) gkt += gP;
    st(gv, i, ek * alpha + dir);
    st(gk, i, gkt);
    const float r2 = fmaxf(rho + W, -q);
    const float f1 = expf(rho + W - r2), f2 = expf(-q - r2);
    alpha = f1 * alpha + f2 * m;
    beta = f1 * beta - f2 * m * yt;
    rho = r2;
  }
  if (gaa0 || gbb0 || gpp0) {
    const float s = expf(rho + p0);  // e^{p_0} times the scale of lam_0
    const float ga0 = alpha * s, gb0 = beta * s;
    if (gaa0) gaa0[idx] = ga0;
    if (gbb0) gbb0[idx] = gb0;
    if (gpp0) gpp0[idx] = ga0 * a0 + gb0 * b0 + (argmax < 0 ? gP : 0.f);
  }
}

bool bad_sizes(int B, int T, int C) { return B < 0 || T < 0 || C < 0; }

unsigned blocks_for(int B, int C) { return (unsigned)(((int64_t)B * C + kThreads - 1) / kThreads); }

template <typename F>
int launch_forward(int B, int T, int C, const float* w, const float* u, const F* k, const F* v, F* y,
                   const float* aa_in, const float* bb_in, const float* pp_in, float* aa_out,
                   float* bb_out, float* pp_out, void* stream) {
  if (bad_sizes(B, T, C)) return (int)cudaErrorInvalidValue;
  if ((int64_t)B * C == 0) return (int)cudaSuccess;
  if (!w || !u || (T > 0 && (!k || !v || !y))) return (int)cudaErrorInvalidValue;
  wkv4_forward_kernel<F><<<blocks_for(B, C), kThreads, 0, (cudaStream_t)stream>>>(
      B, T, C, w, u, k, v, y, aa_in, bb_in, pp_in, aa_out, bb_out, pp_out);
  return (int)cudaGetLastError();
}

template <typename F>
int launch_backward(int B, int T, int C, const float* w, const float* u, const F* k, const F* v,
                    const float* aa0, const float* bb0, const float* pp0, const F* gy,
                    const float* gaaT, const float* gbbT, const float* gppT, F* gk, F* gv,
                    float* gw_part, float* gu_part, float* gaa0, float* gbb0, float* gpp0,
                    float* ws, void* stream) {
  if (bad_sizes(B, T, C)) return (int)cudaErrorInvalidValue;
  if ((int64_t)B * C == 0) return (int)cudaSuccess;
  if (!w || !u || !gw_part || !gu_part) return (int)cudaErrorInvalidValue;
  if (T > 0 && (!k || !v || !gy || !gk || !gv || !ws)) return (int)cudaErrorInvalidValue;
  wkv4_backward_kernel<F><<<blocks_for(B, C), kThreads, 0, (cudaStream_t)stream>>>(
      B, T, C, w, u, k, v, aa0, bb0, pp0, gy, gaaT, gbbT, gppT, gk, gv, gw_part, gu_part, gaa0,
      gbb0, gpp0, ws);
  return (int)cudaGetLastError();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// C ABI. Pointers are device pointers to contiguous arrays; optional ones may be null:
//   forward:  aa_in/bb_in/pp_in null -> the empty state; aa_out/bb_out/pp_out null -> not written.
//   backward: aa0/bb0/pp0 null -> the empty state; gaaT/gbbT/gppT null -> zero upstream gradient;
//             gaa0/gbb0/gpp0 null -> not written. gw_part, gu_part are [B, C] float32 (sum over B
//             for the gradient of w4, u); ws is float32 workspace of 3 * B * T * C elements.
// Returns a cudaError_t (0 = cudaSuccess); cudaErrorInvalidValue for negative sizes or a missing
// required pointer. Launches are asynchronous on `stream` (a cudaStream_t; null = legacy default).

extern "C" {

int wkvbench_wkv4_abi_version(void) { return 1; }

int wkvbench_wkv4_forward_f32(int B, int T, int C, const float* w, const float* u, const float* k,
                              const float* v, float* y, const float* aa_in, const float* bb_in,
                              const float* pp_in, float* aa_out, float* bb_out, float* pp_out,
                              void* stream) {
  return launch_forward<float>(B, T, C, w, u, k, v, y, aa_in, bb_in, pp_in, aa_out, bb_out, pp_out,
                               stream);
}

int wkvbench_wkv4_forward_bf16(int B, int T, int C, const float* w, const float* u, const void* k,
                               const void* v, void* y, const float* aa_in, const float* bb_in,
                               const float* pp_in, float* aa_out, float* bb_out, float* pp_out,
                               void* stream) {
  return launch_forward<__nv_bfloat16>(
      B, T, C, w, u, (const __nv_bfloat16*)k, (const __nv_bfloat16*)v, (__nv_bfloat16*)y, aa_in,
      bb_in, pp_in, aa_out, bb_out, pp_out, stream);
}

int wkvbench_wkv4_backward_f32(int B, int T, int C, const float* w, const float* u, const float* k,
                               const float* v, const float* aa0, const float* bb0,
                               const float* pp0, const float* gy, const float* gaaT,
                               const float* gbbT, const float* gppT, float* gk, float* gv,
                               float* gw_part, float* gu_part, float* gaa0, float* gbb0,
                               float* gpp0, float* ws, void* stream) {
  return launch_backward<float>(B, T, C, w, u, k, v, aa0, bb0, pp0, gy, gaaT, gbbT, gppT, gk, gv,
                                gw_part, gu_part, gaa0, gbb0, gpp0, ws, stream);
}

int wkvbench_wkv4_backward_bf16(int B, int T, int C, const float* w, const float* u, const void* k,
                                const void* v, const float* aa0, const float* bb0,
                                const float* pp0, const void* gy, const float* gaaT,
                                const float* gbbT, const float* gppT, void* gk, void* gv,
                                float* gw_part, float* gu_part, float* gaa0, float* gbb0,
                                float* gpp0, float* ws, void* stream) {
  return launch_backward<__nv_bfloat16>(
      B, T, C, w, u, (const __nv_bfloat16*)k, (const __nv_bfloat16*)v, aa0, bb0, pp0,
      (const __nv_bfloat16*)gy, gaaT, gbbT, gppT, (__nv_bfloat16*)gk, (__nv_bfloat16*)gv, gw_part,
      gu_part, gaa0, gbb0, gpp0, ws, stream);
}

const char* wkvbench_wkv4_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }

}  // extern "C"
