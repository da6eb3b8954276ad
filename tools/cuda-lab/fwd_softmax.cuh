// The register-resident forwards' per-tile softmax and their output
// (attention_fwd_mma.cu, sm90a/attention_fwd_wgmma.cu): a warp's 16 query
// rows, with scores and output in the C-fragment layout of mma.sync m16n8k8
// (mma_tf32.cuh), which is also wgmma's per warp: element e of s[j] is row
// r0 + 8 (e >> 1), key 8j + 2t + (e & 1) of the tile pair; o[n] likewise
// with columns 8n + 2t + (e & 1). A row lives in the 4 lanes of a quad.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cuda/attention_common.cuh"

namespace hkt::cuda {
namespace {

// One key tile of the online softmax: s holds w_0 Q K^T for the tile pair
// (query tile at i0, key tile at j0, BT = 8 NT rows each) and becomes the
// unnormalised probabilities P; the coarse levels are added from the folded
// grids (combine_folded), masked keys give 0, and the running maximum m_run,
// sum l_run and output o are rescaled.
template <int NT, int ND>
__device__ __forceinline__ void online_softmax_tile(const Params& P, const Layout& lay, float w0, const float* Cg,
                                                    int64_t b, int64_t i0, int64_t j0, int r0, int t,
                                                    float (&s)[NT][4], float (&o)[ND][4], float (&m_run)[2],
                                                    float (&l_run)[2]) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float mx[2] = {kNegInf, kNegInf};
  with_mask_test(!pair_unmasked(P, i0, j0, 8 * NT), [&](auto masked) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int p = r0 + 8 * (e >> 1), p2 = 8 * j + 2 * t + (e & 1);
        if (decltype(masked)::value && key_masked(P, b, i0 + p, j0 + p2)) {
          s[j][e] = kNegInf;
        } else {
          s[j][e] = combine_folded(P, lay, w0, Cg, p, p2, s[j][e]);
          mx[e >> 1] = s[j][e] > mx[e >> 1] ? s[j][e] : mx[e >> 1];
        }
      }
  });
  float alpha[2], rs[2] = {0.0f, 0.0f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = max(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = max(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    const float m_new = mx[r] > m_run[r] ? mx[r] : m_run[r];
    alpha[r] = m_new == kNegInf ? 1.0f : m_run[r] == kNegInf ? 0.0f : fast_exp(m_run[r] - m_new);
    mx[r] = m_new;
  }
  const float mx2[2] = {mx[0] * kLog2e, mx[1] * kLog2e};  // exp_minus's m2
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1;
      s[j][e] = mx[r] == kNegInf || s[j][e] == kNegInf ? 0.0f : exp_minus(s[j][e], mx2[r]);
      rs[r] += s[j][e];
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 1);
    rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 2);
    l_run[r] = l_run[r] * alpha[r] + rs[r];
    m_run[r] = mx[r];
  }
#pragma unroll
  for (int n = 0; n < ND; ++n) {
    o[n][0] *= alpha[0];
    o[n][1] *= alpha[0];
    o[n][2] *= alpha[1];
    o[n][3] *= alpha[1];
  }
}

// O / l and LSE for the warp's rows, straight from the fragments: columns
// 8n + 2t, 8n + 2t + 1 as one float2 (O's rows are aligned, expect_rows_aligned).
template <int ND>
__device__ __forceinline__ void store_forward_rows(const Params& P, int64_t bh, int64_t i0, int r0, int t,
                                                   const float (&o)[ND][4], const float (&m_run)[2],
                                                   const float (&l_run)[2], float* O, float* LSE) {
  const int dh = int(P.dh);
  expect_rows_aligned(O, dh);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = i0 + r0 + 8 * r;
    if (i < 0 || i >= P.T) continue;
    const float inv = l_run[r] > 0 ? 1.0f / l_run[r] : 0.0f;
    float* orow = O + (bh * P.T + i) * P.dh;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      const int c = 8 * n + 2 * t;
      if (c < dh) *reinterpret_cast<float2*>(orow + c) = float2{o[n][2 * r] * inv, o[n][2 * r + 1] * inv};
    }
    if (t == 0)
      LSE[bh * P.T + i] = l_run[r] > 0 ? m_run[r] + log(l_run[r]) : std::numeric_limits<float>::infinity();
  }
}

}  // namespace
}  // namespace hkt::cuda
