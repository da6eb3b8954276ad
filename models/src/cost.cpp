// The cost model of docs/hkt.md: FLOPs of the Q K^T score products, and of all the
// products of a classifier (the whole-model ratio of HKT to MHA).
#include "hkt/models/attention.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/models/efficient_attention.hpp"
#include "hkt/models/htransformer.hpp"
#include "hkt/ops/htransformer.hpp"

#include <algorithm>

namespace hkt::nn {

ScoreCost score_flops(int64_t B, int64_t T, int64_t D, int64_t H, int64_t L) {
  HKT_CHECK(B >= 1 && T >= 1, "score_flops: B and T must be >= 1, got B = ", B, ", T = ", T);
  HKT_CHECK(D >= 1 && H >= 1 && D % H == 0, "score_flops: D (", D, ") must be a positive multiple of H (", H, ")");
  HKT_CHECK(L >= 1 && L <= 62, "score_flops: L must be in [1, 62], got ", L);
  const double bhd = static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(D / H);
  ScoreCost c;
  for (int64_t l = 0; l < L; ++l) {
    // T_l = ceil(T / 2^l)
    const int64_t block = int64_t{1} << l;
    const double tl = static_cast<double>(T / block + (T % block != 0));
    c.per_level.push_back(2.0 * bhd * tl * tl);
    c.total += c.per_level.back();
  }
  c.mha = 2.0 * bhd * static_cast<double>(T) * static_cast<double>(T);
  c.ratio = c.total / c.mha;
  return c;
}

namespace {

// Local and Performer attention (docs/models.md): the projections and FFN of
// MHA; local: scores and values over the visible pairs only (sum over i of
// |N(i)|); Performer: the feature maps (FAVOR+: x W^T for q and k, 2 x 2 n m D)
// as "scores", phi_k^T V and phi_q (phi_k^T V) (2 x 2 n m D) as "values",
// and causal: the [c, c] products inside chunks of c = 64 (2 n c (m + D)).
ModelFlops efficient_flops(const ClassifierConfig& cfg, int64_t B, int64_t T) {
  const double D = static_cast<double>(cfg.dim), b = static_cast<double>(B), n = b * static_cast<double>(T);
  ModelFlops f;
  const bool causal = cfg.attention.causal;
  double pairs = 0;  // local: visible (query, key) pairs of one sequence
  if (const LocalOptions* local = cfg.attention.find<LocalOptions>())
    for (int64_t i = 0; i < T; ++i) {
      const int64_t lo = std::max<int64_t>(0, i - local->window), hi = causal ? i : std::min(T - 1, i + local->window);
      pairs += static_cast<double>(hi - lo + 1);
    }
  if (const HTransformerOptions* htr = cfg.attention.find<HTransformerOptions>())
    // docs/htransformer.md, "Cost": the published layout's computed scores per head (ANCHOR
    // blocks, LEFT/RIGHT blocks at every level, correction quarters included: 37,376 at
    // T = 512, Nr = 16), each a q.k and a weight times v.
    pairs = static_cast<double>(htransformer_score_count(T, htr->block, causal));
  const PerformerOptions* performer = cfg.attention.find<PerformerOptions>();
  const double m = performer ? static_cast<double>(performer->features) : 0.0;
  const double chunk = static_cast<double>(std::min<int64_t>(64, T));
  for (int64_t layer = 0; layer < cfg.layers; ++layer) {
    f.projections += 4 * 2.0 * n * D * D;  // Wq, Wk, Wv, Wo
    if (!performer) {
      f.scores += 2.0 * b * pairs * D;
      f.values += 2.0 * b * pairs * D;
    } else {
      if (performer->feature_map == "favor+") f.scores += 2 * 2.0 * n * m * D;
      f.values += 2 * 2.0 * n * m * D;
      if (causal) f.values += 2.0 * n * chunk * (m * static_cast<double>(cfg.heads) + D);
    }
    f.ffn += 2 * 2.0 * n * D * D * static_cast<double>(cfg.ffn_mult);
  }
  if (cfg.input_features > 0) f.other += 2.0 * n * static_cast<double>(cfg.input_features) * D;
  f.other += 2.0 * b * D * static_cast<double>(cfg.classes);
  return f;
}

}  // namespace

ModelFlops model_flops(const ClassifierConfig& cfg, int64_t B, int64_t T) {
  HKT_CHECK(B >= 1 && T >= 1, "model_flops: B and T must be >= 1, got B = ", B, ", T = ", T);
  cfg.validate();
  const double D = static_cast<double>(cfg.dim), b = static_cast<double>(B), t = static_cast<double>(T);
  const double n = b * t;  // tokens
  const HKTOptions* hkt = cfg.attention.find<HKTOptions>();
  if (!hkt && !cfg.attention.find<MHAOptions>()) return efficient_flops(cfg, B, T);
  const bool conv_only = hkt && hkt->conv_only;  // no Wq, Wk, scores, A V or downsamplers
  const int64_t L = conv_only ? 0 : hkt ? hkt->levels : 1;
  const int64_t kDownKernel = 3;  // Downsample: causal depthwise conv, kernel 3, stride 2
  ModelFlops f;
  for (int64_t layer = 0; layer < cfg.layers; ++layer) {
    f.projections += 2 * 2.0 * n * D * D;  // Wv, Wo
    for (int64_t l = 0; l < L; ++l) {
      const int64_t block = int64_t{1} << l;
      const double tl = static_cast<double>(T / block + (T % block != 0));
      f.projections += 2 * 2.0 * b * tl * D * D;  // Wq_l, Wk_l
      f.scores += 2.0 * b * tl * tl * D;          // sum over heads of T_l^2 dh
      if (l > 0) {
        f.downsample += 2.0 * b * tl * D * static_cast<double>(kDownKernel);
        if (hkt->pointwise) f.downsample += 2.0 * b * tl * D * D;
      }
    }
    if (!conv_only) f.values += 2.0 * b * t * t * D;
    if (hkt && hkt->hybrid) f.hybrid += 2.0 * n * D * 3.0;  // AttentionConfig::conv_kernel = 3
    f.ffn += 2 * 2.0 * n * D * D * static_cast<double>(cfg.ffn_mult);
  }
  if (cfg.input_features > 0) f.other += 2.0 * n * static_cast<double>(cfg.input_features) * D;
  f.other += 2.0 * b * D * static_cast<double>(cfg.classes);
  return f;
}

}  // namespace hkt::nn
