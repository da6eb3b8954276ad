// Fused HKT attention (and MHA, its L = 1 case) on the GPU: the math of
// kernels/cpu/hkt_attention.cpp, FlashAttention-style, never forming T x T.
//
// Tiles. Positions are cut into tiles of BT (64, or 32 when shared memory is
// short) starting at t * BT - off, off = 1 when causal, else 0; positions
// outside [0, T) are virtual (zero rows, masked keys, never written). With
// this alignment local position p of tile t reads coarse row
// c0(t, l) + (p >> l), c0(t, l) = ((t * BT) >> l) - off, at every level
// (bidirectional: i >> l; causal: floor((i + 1) / 2^l) - 1, whose rows < 0
// are zero rows, so their term is 0), and every coarse row belongs to
// exactly one tile. A tile pair's level-l scores therefore form a
// G x G grid, G = BT >> l, computed once per pair from G coarse query and
// key rows in shared memory:
//   S[p, p'] = w_0 Q_0[p] . K_0[p'] + sum_{l >= 1} w_l Cg_l[p >> l, p' >> l],
//   w_l = lambda[h, l] * scale.
// Every tile product (Q K^T, P V, dO V^T, dS K, P^T dO, dS^T Q and the coarse
// ones) is a block-wide product in shared memory (tile_mm.cuh: tensor cores
// with the float32-accurate 3xTF32 split for float, a plain loop for double).
// Head dims are padded with zero columns to dhp = round_up(dh, 16).
//
// Forward: one block per (query tile, b * h), 4 threads per query row for the
// softmax; an online softmax streams over key tiles (causal: up to the
// diagonal) with O accumulated in shared memory and rescaled per row. Writes
// O and LSE (+inf for a row whose keys are all masked, which gets O = 0).
//
// Backward (P = exp(S - LSE) recomputed, D = rowsum(dO * O),
// dS = P (dP - D), dP = dO V^T), two kernels so that nothing needs atomics:
//   key side   (block per key tile):   dV += P^T dO, dK_0 += w_0 dS^T Q_0,
//              dK_l += w_l dSg_l^T Q_l (dSg_l: 2^l x 2^l block sums of dS)
//   query side (block per query tile): dQ_0 += w_0 dS K_0,
//              dQ_l += w_l dSg_l K_l, and per block dlambda partials
//              scale * sum dSg_l * Cg_l, summed per head in a fixed order.
// Every sum has a fixed order: the bits are reproducible.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <limits>
#include <string_view>
#include <type_traits>

#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/attention_bwd.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_variants.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/tile_mm.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

constexpr int kBwdTile = 64;  // the backward's preferred tile (pick_tile)

// ---------------------------------------------------------------------------
// float64: at least 1 block per SM, which lets ptxas take the registers it
// needs (with no minimum it held BT = 32 to 72 and spilled; its shared memory
// allows few blocks anyway). float32: no minimum (0, as if left out).
template <class T, int BT>
__global__ void __launch_bounds__(4 * BT, std::is_same_v<T, double> ? 1 : 0) attn_fwd(const Params P, T* O, T* LSE) {
  HKT_DYNAMIC_SHARED(smem_raw);
  const Layout lay(BT, int(P.dh), P.L);
  const int ld = lay.ld, lds = lay.lds, dh = int(P.dh), dhp = lay.dhp;
  Carver<T> cv{reinterpret_cast<T*>(smem_raw)};
  T* Q0 = cv.take(lay.rows());
  T* Ks = cv.take(lay.rows());
  T* Vs = cv.take(lay.rows());
  T* Os = cv.take(lay.rows());
  T* Ss = cv.take(lay.scores());
  T* Ql = cv.take(lay.level_rows());
  T* Kl = cv.take(lay.level_rows());
  T* Cg = cv.take(lay.grid_off(P.L));

  const int tq = blockIdx.x;
  const int64_t bh = blockIdx.y, b = bh / P.H, h = bh % P.H;
  const int p = threadIdx.x >> 2, r4 = threadIdx.x & 3;
  constexpr int M = BT / 4;
  const int64_t i = int64_t(tq) * BT - P.off + p;
  T w[kMaxLevels];
  level_weights(P, h, w);

  const T* k0 = level_rows<T>(P, P.k, 0, bh);
  const T* vv = static_cast<const T*>(P.v) + bh * P.T * P.dh;
  load_rows(Q0, ld, level_rows<T>(P, P.q, 0, bh), int64_t(tq) * BT - P.off, BT, P.T, dh, dhp);
  zero(Os, BT * ld);

  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T m_run = kNegInf, l_run = 0;
  const int last = P.causal ? tq : P.nt - 1;
  for (int tk = 0; tk <= last; ++tk) {
    const int64_t j0 = int64_t(tk) * BT - P.off;
    __syncthreads();  // the previous tile's readers of Ks, Vs, Ss are done
    const RowCopy<T> kv[2] = {{Ks, k0, j0}, {Vs, vv, j0}};
    load_rows(kv, ld, BT, P.T, dh, dhp);
    level_grids<T>(P, bh, tq, tk, lay, Ql, Kl, Cg);  // barriers before and after
    tile_mm<true, false>(Ss, lds, Q0, ld, Ks, ld, BT, BT, dhp, false);  // Q_0 K_0^T
    __syncthreads();
    T s[M];
    T mx = kNegInf;
    with_mask_test(!pair_unmasked(P, int64_t(tq) * BT - P.off, j0, BT), [&](auto masked) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const int p2 = r4 + 4 * m;
        if (decltype(masked)::value && key_masked(P, b, i, j0 + p2)) {
          s[m] = kNegInf;
        } else {
          s[m] = combine(P, lay, w, Cg, p, p2, Ss[p * lds + p2]);
          mx = s[m] > mx ? s[m] : mx;
        }
      }
    });
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const T m_new = mx > m_run ? mx : m_run;
    T alpha = 1, rs = 0;
    if (m_new != kNegInf) {
      alpha = m_run == kNegInf ? T(0) : exp(m_run - m_new);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        s[m] = s[m] == kNegInf ? T(0) : exp(s[m] - m_new);
        rs += s[m];
      }
    } else {
#pragma unroll
      for (int m = 0; m < M; ++m) s[m] = 0;
    }
    rs += __shfl_xor_sync(0xffffffffu, rs, 1);
    rs += __shfl_xor_sync(0xffffffffu, rs, 2);
    l_run = l_run * alpha + rs;
    m_run = m_new;
    // Each thread rewrites only its own scores and its own quarter of row p of O.
#pragma unroll
    for (int m = 0; m < M; ++m) Ss[p * lds + r4 + 4 * m] = s[m];
    for (int d = r4; d < dhp; d += 4) Os[p * ld + d] *= alpha;
    __syncthreads();
    tile_mm<true, true>(Os, ld, Ss, lds, Vs, ld, BT, dhp, BT, true);  // O += P V
  }
  __syncthreads();
  if (i >= 0 && i < P.T) {
    const T inv = l_run > 0 ? T(1) / l_run : T(0);
    T* orow = O + (bh * P.T + i) * P.dh;
    for (int d = r4; d < dh; d += 4) orow[d] = Os[p * ld + d] * inv;
    if (r4 == 0) LSE[bh * P.T + i] = l_run > 0 ? m_run + log(l_run) : std::numeric_limits<T>::infinity();
  }
}

// D[i] = sum_d dO[i, d] O[i, d], a warp per row: lane l takes the elements
// l, l + 32, ... (coalesced loads), then a fixed butterfly of shuffles sums
// the lanes, so the bits do not depend on timing.
template <class T>
__global__ void attn_rowdot(const T* dO, const T* O, int64_t rows, int64_t dh, T* D) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    T s = 0;
    for (int64_t d = lane; d < dh; d += 32) s += dO[r * dh + d] * O[r * dh + d];
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    if (lane == 0) D[r] = s;
  }
}

// dlambda[h, l] = sum over b and query tiles, in order.
template <class T>
__global__ void attn_dlambda(const double* part, int64_t B, int64_t H, int nt, int L, T* dlambda) {
  HKT_CUDA_LOOP(e, H * L) {
    const int64_t h = e / L, l = e % L;
    double s = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int t = 0; t < nt; ++t) s += part[((b * H + h) * nt + t) * L + l];
    dlambda[e] = static_cast<T>(s);
  }
}

// --- host side ----------------------------------------------------------------

// The largest tile (64 or 32) whose shared memory fits and whose coarsest
// level still has a row per tile (BT >= 2^(L-1)).
template <class T>
int pick_tile(const AttnShape& s, bool bwd, size_t* bytes) {
  HKT_CHECK(s.L >= 1 && s.L <= kMaxLevels, "hkt_attention: the CUDA kernel takes 1 to ", kMaxLevels,
            " levels, got L = ", s.L);
  // The preferred tile of the forward and of the backward; HKT_CUDA_ATTN_TILE="FWD,BWD"
  // (each 64 or 32) overrides them, for the benchmark's comparisons.
  static const std::pair<int, int> preferred = [] {
    std::pair<int, int> p{64, kBwdTile};
    if (const char* e = std::getenv("HKT_CUDA_ATTN_TILE")) {
      int f = 0, b = 0;
      if (std::sscanf(e, "%d,%d", &f, &b) == 2 && (f == 32 || f == 64) && (b == 32 || b == 64)) p = {f, b};
    }
    return p;
  }();
  const int first = bwd ? preferred.second : preferred.first;
  for (int bt : {first, 32}) {
    if ((int64_t{1} << (s.L - 1)) > bt) continue;
    const Layout lay(bt, int(s.dh), int(s.L));
    *bytes = static_cast<size_t>(bwd ? lay.bwd_elems() : lay.fwd_elems()) * sizeof(T);
    // 1 KiB of headroom for the kernels' static shared memory (block_reduce).
    if (*bytes + 1024 <= static_cast<size_t>(max_smem_optin())) return bt;
  }
  throw Error(str_cat("hkt_attention: no CUDA tile fits: dh = ", s.dh, ", L = ", s.L, ", ", sizeof(T) * 8,
                      "-bit floats need more shared memory than the device's ", max_smem_optin(),
                      " bytes per block (use ", std::is_same_v<T, float> ? "" : "float32, ",
                      "a smaller head dim, ", s.L == kMaxLevels ? "at most 6 levels (32-row tiles), " : "",
                      "or the cpu)"));
}

template <class T, int BT>
void launch_fwd(const Params& P, size_t bytes, T* o, T* lse) {
  allow_smem(attn_fwd<T, BT>, bytes);
  const dim3 grid(static_cast<unsigned>(P.nt), static_cast<unsigned>(P.B * P.H));
  HKT_LAUNCH(grid, 4 * BT, bytes, attn_fwd<T, BT>)(P, o, lse);
  CUDA_CHECK_LAUNCH();
}

// The two backward kernels with their accumulators in shared memory
// (attention_bwd.cuh; NF = 0).
template <class T, int BT>
void launch_bwd(const Params& P, size_t bytes, const T* dout, const T* lse, const T* D, const LevelPtrs<T>& dk,
                T* dv, const LevelPtrs<T>& dq, double* part) {
  launch_bwd_nf<T, BT, 0>(P, bytes, dout, lse, D, dk, dv, dq, part);
}

constexpr std::pair<FwdKernel, const char*> kFwdNames[] = {
    {FwdKernel::general, "general"}, {FwdKernel::mma, "mma"},       {FwdKernel::mma_async, "mma-async"},
    {FwdKernel::mma_lean, "mma-lean"}, {FwdKernel::wgmma, "wgmma"}, {FwdKernel::wgmma2, "wgmma2"}};
constexpr std::pair<BwdKernel, const char*> kBwdNames[] = {
    {BwdKernel::general, "general"}, {BwdKernel::general_regs, "general-regs"}, {BwdKernel::mma, "mma"},
    {BwdKernel::fused, "fused"},     {BwdKernel::fused8, "fused8"},             {BwdKernel::fused8_async, "fused8-async"},
    {BwdKernel::wgmma, "wgmma"}};

template <class K, size_t N>
const char* name_of(const std::pair<K, const char*> (&names)[N], K k) {
  for (const auto& [kk, n] : names)
    if (kk == k) return n;
  return "?";
}
template <class K, size_t N>
K parse_knob(const std::pair<K, const char*> (&names)[N], const char* var, bool* set) {
  const char* e = std::getenv(var);
  *set = e && *e;
  if (!*set) return names[0].first;
  std::string accepted;
  for (const auto& [k, n] : names) {
    if (std::string_view(e) == n) return k;
    accepted += accepted.empty() ? n : std::string(", ") + n;
  }
  throw Error(str_cat("hkt_attention: ", var, "=", e, " names no kernel; it takes one of ", accepted,
                      " (docs/cuda.md, \"The lab\")"));
}

// The variant `kern` names (tools/cuda-lab's), or null when the lab has not
// installed it.
AttnForwardVariant installed(FwdKernel kern) { return attention_variants().forward[int(kern)]; }
AttnBackwardVariant installed(BwdKernel kern) { return attention_variants().backward[int(kern)]; }

// A switch that names a kernel the library does not hold and the lab has not
// installed: an error saying where it is.
void expect_installed(bool ok, const char* var, const char* name) {
  HKT_CHECK(ok, "hkt_attention: ", var, "=", name,
            " names a kernel of tools/cuda-lab, which this program has not installed (the library holds the "
            "general kernels; build with -DHKT_CUDA_LAB=ON and call install_lab_variants(), as hkt-bench-gpu "
            "does; docs/cuda.md, \"The lab\")");
}
void expect_installed(FwdKernel kern, bool set) {
  if (set && kern != FwdKernel::general) expect_installed(installed(kern) != nullptr, "HKT_CUDA_ATTN_FWD", kernel_name(kern));
}
void expect_installed(BwdKernel kern, bool set) {
  if (set && kern != BwdKernel::general)
    expect_installed(installed(kern) != nullptr,
                     kern == BwdKernel::general_regs ? "HKT_CUDA_ATTN_BWD_ACC" : "HKT_CUDA_ATTN_BWD",
                     kern == BwdKernel::general_regs ? "regs" : kernel_name(kern));
}

// HKT_CUDA_ATTN_AUTOTUNE asks for the lab's autotuner: an error, saying where
// it is, in a program that has not installed it (rather than being ignored).
void expect_tuner(bool installed) {
  const char* e = std::getenv("HKT_CUDA_ATTN_AUTOTUNE");
  HKT_CHECK(installed || !e || !*e || std::string_view(e) == "0", "hkt_attention: HKT_CUDA_ATTN_AUTOTUNE=", e,
            " asks for the autotuner of tools/cuda-lab, which this program has not installed (the library runs its "
            "general kernels; build with -DHKT_CUDA_LAB=ON and call install_lab_variants(), as hkt-bench-gpu does, "
            "or unset the variable; docs/cuda.md, \"The lab\")");
}

// Runs the forward with kernel `kern`, or returns false, having launched
// nothing, when `kern` cannot take the call (general takes every call).
template <class T>
bool forward_with(FwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                  const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid, void* o,
                  void* lse) {
  if (kern != FwdKernel::general) {
    if constexpr (std::is_same_v<T, float>) {
      const AttnForwardVariant f = installed(kern);
      return f && f(s, q, k, v, lambda, valid, static_cast<float*>(o), static_cast<float*>(lse));
    }
    return false;
  }
  size_t bytes = 0;
  const int bt = pick_tile<T>(s, false, &bytes);
  const Params P = make_params(s, q, k, v, lambda, valid, bt);
  if (bt == 64)
    launch_fwd<T, 64>(P, bytes, static_cast<T*>(o), static_cast<T*>(lse));
  else
    launch_fwd<T, 32>(P, bytes, static_cast<T*>(o), static_cast<T*>(lse));
  return true;
}

// Runs the whole backward (zeroing, D, the kernels, the dlambda sum) with
// kernel `kern`, or returns false when `kern` cannot take the call (its
// outputs may have been zeroed; general takes every call).
template <class T>
bool backward_with(BwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                   const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                   const void* o, const void* lse, const void* dout, const std::vector<void*>& dq,
                   const std::vector<void*>& dk, void* dv, void* dlambda) {
  const bool general = kern == BwdKernel::general;
  AttnBackwardVariant variant = nullptr;
  if (!general) {
    // The variants' contract (attention_variants.hpp): float, dh <= 64, aligned rows.
    if constexpr (std::is_same_v<T, float>)
      if (s.dh <= kMmaMaxDh && mma_rows_aligned(s.dh, q, k, v, dout, dq, dk, dv)) variant = installed(kern);
    if (!variant) return false;
  }
  size_t bytes = 0;
  const int bt = general ? pick_tile<T>(s, true, &bytes) : kMmaTile;
  const Params P = make_params(s, q, k, v, lambda, valid, bt);
  // Coarse rows that only virtual positions map to get no gradient: zero everything first.
  for (int64_t l = 0; l < s.L; ++l) {
    const size_t n = static_cast<size_t>(level_elems(s, l)) * sizeof(T);
    if (!dq.empty()) CUDA_CHECK(cudaMemsetAsync(dq[static_cast<size_t>(l)], 0, n, stream()));
    if (!dk.empty()) CUDA_CHECK(cudaMemsetAsync(dk[static_cast<size_t>(l)], 0, n, stream()));
  }
  const int64_t rows = s.B * s.H * s.T;
  Scratch D(static_cast<size_t>(rows) * sizeof(T));
  HKT_LAUNCH(blocks_for(rows * 32), kThreads, 0, attn_rowdot<T>)(static_cast<const T*>(dout),
                                                                 static_cast<const T*>(o), rows, s.dh, D.as<T>());
  CUDA_CHECK_LAUNCH();
  const LevelPtrs<T> dq_dev = level_ptrs<T>(dq), dk_dev = level_ptrs<T>(dk);
  const size_t nparts = static_cast<size_t>(s.B * s.H * P.nt * s.L);
  Scratch part(dlambda ? nparts * sizeof(double) : sizeof(double));
  double* part_dev = dlambda ? part.as<double>() : nullptr;
  if (general) {
    if (bt == 64)
      launch_bwd<T, 64>(P, bytes, static_cast<const T*>(dout), static_cast<const T*>(lse), D.as<T>(), dk_dev,
                        static_cast<T*>(dv), dq_dev, part_dev);
    else
      launch_bwd<T, 32>(P, bytes, static_cast<const T*>(dout), static_cast<const T*>(lse), D.as<T>(), dk_dev,
                        static_cast<T*>(dv), dq_dev, part_dev);
  } else if constexpr (std::is_same_v<T, float>) {
    if (!variant(s, q, k, v, lambda, valid, static_cast<const float*>(dout), static_cast<const float*>(lse),
                 D.as<float>(), dq, dk, static_cast<float*>(dv), part_dev))
      return false;
  }
  if (dlambda) {
    HKT_LAUNCH(blocks_for(s.H * s.L), kThreads, 0, attn_dlambda<T>)(part_dev, s.B, s.H, P.nt, int(s.L),
                                                                    static_cast<T*>(dlambda));
    CUDA_CHECK_LAUNCH();
  }
  return true;
}

}  // namespace

const char* kernel_name(FwdKernel k) { return name_of(kFwdNames, k); }
const char* kernel_name(BwdKernel k) { return name_of(kBwdNames, k); }
FwdKernel fwd_kernel_knob(bool* set) { return parse_knob(kFwdNames, "HKT_CUDA_ATTN_FWD", set); }
BwdKernel bwd_kernel_knob(bool* set) {
  const BwdKernel k = parse_knob(kBwdNames, "HKT_CUDA_ATTN_BWD", set);
  // HKT_CUDA_ATTN_BWD_ACC=regs: the lab's general backward with its accumulators in registers.
  const char* acc = std::getenv("HKT_CUDA_ATTN_BWD_ACC");
  if (acc && *acc) {
    HKT_CHECK(std::string_view(acc) == "regs" || std::string_view(acc) == "smem", "hkt_attention: HKT_CUDA_ATTN_BWD_ACC=",
              acc, " is neither regs nor smem");
    if (std::string_view(acc) == "regs" && k == BwdKernel::general) {
      *set = true;
      return BwdKernel::general_regs;
    }
  }
  return k;
}

AttentionVariants& attention_variants() {
  static AttentionVariants v;
  return v;
}

int64_t level_elems(const AttnShape& s, int64_t l) { return s.B * s.H * level_len(s.T, int(l)) * s.dh; }

bool attention_forward_with(FwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                            const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                            float* o, float* lse) {
  return forward_with<float>(kern, s, q, k, v, lambda, valid, o, lse);
}
bool attention_backward_with(BwdKernel kern, const AttnShape& s, const std::vector<const void*>& q,
                             const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                             const float* o, const float* lse, const float* dout, const std::vector<void*>& dq,
                             const std::vector<void*>& dk, float* dv, float* dlambda) {
  return backward_with<float>(kern, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda);
}

// The kernel: the switch's when HKT_CUDA_ATTN_FWD is set; else, for float,
// the lab's chooser's when one is installed (its autotuner); else general.
// A kernel that cannot take the call leaves it to general.
template <class T>
void attention_forward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                       const void* v, const void* lambda, const bool* valid, void* o, void* lse) {
  if (s.B * s.H == 0) return;
  bool set = false;
  FwdKernel kern = fwd_kernel_knob(&set);
  if constexpr (std::is_same_v<T, float>) {
    expect_installed(kern, set);
    if (!set) expect_tuner(attention_variants().choose_forward != nullptr);
    if (!set && attention_variants().choose_forward)
      kern = attention_variants().choose_forward(s, q, k, v, lambda, valid, static_cast<float*>(o),
                                                 static_cast<float*>(lse));
  }
  if (!forward_with<T>(kern, s, q, k, v, lambda, valid, o, lse))
    forward_with<T>(FwdKernel::general, s, q, k, v, lambda, valid, o, lse);
}

// The kernel is chosen as the forward's (HKT_CUDA_ATTN_BWD). wgmma leaves a
// call it cannot take to mma, and the others to general.
template <class T>
void attention_backward(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                        const void* v, const void* lambda, const bool* valid, const void* o, const void* lse,
                        const void* dout, const std::vector<void*>& dq, const std::vector<void*>& dk, void* dv,
                        void* dlambda) {
  if (s.B * s.H == 0) {
    if (dlambda) CUDA_CHECK(cudaMemsetAsync(dlambda, 0, static_cast<size_t>(s.H * s.L) * sizeof(T), stream()));
    return;
  }
  bool set = false;
  BwdKernel kern = bwd_kernel_knob(&set);
  if constexpr (std::is_same_v<T, float>) {
    expect_installed(kern, set);
    if (!set) expect_tuner(attention_variants().choose_backward != nullptr);
    if (!set && attention_variants().choose_backward)
      kern = attention_variants().choose_backward(s, q, k, v, lambda, valid, static_cast<const float*>(o),
                                                  static_cast<const float*>(lse), static_cast<const float*>(dout),
                                                  dq, dk, static_cast<float*>(dv), static_cast<float*>(dlambda));
  }
  if (backward_with<T>(kern, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda)) return;
  if (kern == BwdKernel::wgmma &&
      backward_with<T>(BwdKernel::mma, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda))
    return;
  backward_with<T>(BwdKernel::general, s, q, k, v, lambda, valid, o, lse, dout, dq, dk, dv, dlambda);
}

template void attention_forward<float>(const AttnShape&, const std::vector<const void*>&,
                                       const std::vector<const void*>&, const void*, const void*, const bool*, void*,
                                       void*);
template void attention_forward<double>(const AttnShape&, const std::vector<const void*>&,
                                        const std::vector<const void*>&, const void*, const void*, const bool*, void*,
                                        void*);
template void attention_backward<float>(const AttnShape&, const std::vector<const void*>&,
                                        const std::vector<const void*>&, const void*, const void*, const bool*,
                                        const void*, const void*, const void*, const std::vector<void*>&,
                                        const std::vector<void*>&, void*, void*);
template void attention_backward<double>(const AttnShape&, const std::vector<const void*>&,
                                         const std::vector<const void*>&, const void*, const void*, const bool*,
                                         const void*, const void*, const void*, const std::vector<void*>&,
                                         const std::vector<void*>&, void*, void*);

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(attention, attention_forward<T>)
HKT_CUDA_KERNEL(attention_backward)

}  // namespace hkt::cuda
