// Local and Performer attention layers (hkt/models/efficient_attention.hpp).
#include "hkt/models/efficient_attention.hpp"

#include <algorithm>
#include <cmath>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/linear_attention.hpp"
#include "hkt/ops/local_attention.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"
#include "attention_util.hpp"
#include "option_fields.hpp"

namespace hkt::nn {
namespace {

using detail::check_inputs;
using detail::merge_heads;
using detail::projections;
using detail::split_heads;
using detail::zero_padded;

}  // namespace

LocalAttention::LocalAttention(const LocalConfig& cfg) : Module("LocalAttention"), cfg_(cfg) {
  HKT_CHECK(cfg.window >= 0, "LocalAttention: window must be >= 0, got ", cfg.window);
  std::shared_ptr<Linear> w[4];
  projections(*this, cfg, w);
  wq = w[0], wk = w[1], wv = w[2], wo = w[3];
}

Tensor LocalAttention::forward(const Tensor& x, const Tensor& valid) {
  check_inputs(x, valid, cfg_.dim, "LocalAttention");
  const int64_t H = cfg_.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.dim / H));
  const Tensor q = split_heads(wq->forward(x), H), k = split_heads(wk->forward(x), H);
  const Tensor v = split_heads(zero_padded(wv->forward(x), valid), H);
  const Tensor a = cfg_.fused ? local_attention(q, k, v, valid, cfg_.window, cfg_.causal, scale)
                              : local_attention_reference(q, k, v, valid, cfg_.window, cfg_.causal, scale);
  return zero_padded(wo->forward(merge_heads(a)), valid);
}

PerformerAttention::PerformerAttention(const PerformerConfig& cfg) : Module("PerformerAttention"), cfg_(cfg) {
  HKT_CHECK(cfg.features >= 1, "PerformerAttention: features must be >= 1, got ", cfg.features);
  HKT_CHECK(cfg.feature_map == "favor+" || cfg.feature_map == "elu+1",
            "PerformerAttention: feature_map must be \"favor+\" or \"elu+1\", got \"", cfg.feature_map, "\"");
  HKT_CHECK(cfg.redraw_interval >= -1, "PerformerAttention: redraw_interval must be >= 0, or -1 (every call), got ",
            cfg.redraw_interval);
  HKT_CHECK(std::isfinite(cfg.epsilon) && cfg.epsilon >= 0, "PerformerAttention: epsilon must be finite and >= 0, got ",
            cfg.epsilon);
  std::shared_ptr<Linear> w[4];
  projections(*this, cfg, w);
  wq = w[0], wk = w[1], wv = w[2], wo = w[3];
  if (cfg.feature_map == "favor+")
    features = register_buffer("features", orthogonal_features(cfg.features, cfg.dim / cfg.heads, cfg.seed, cfg.dtype));
  draws = register_buffer("draws", zeros({1}, {DType::Int64}));
}

Tensor PerformerAttention::phi(const Tensor& x, bool is_query, const Tensor& valid, bool causal) const {
  return features.defined() ? favor_features(x, features, is_query, valid, cfg_.epsilon, causal) : elu1_features(x);
}

Tensor PerformerAttention::forward(const Tensor& x, const Tensor& valid) {
  check_inputs(x, valid, cfg_.dim, "PerformerAttention");
  const int64_t H = cfg_.heads;
  const Tensor q = split_heads(wq->forward(x), H);
  if (features.defined() && cfg_.redraw_interval < 0) {
    // Every call, training and evaluation, as google-research/performer's fast_attention with
    // redraw_features=True (LRA's Performer): the draw is seeded from the call's queries,
    // ceil(sum(q) 1e7) as int32, so one input always meets the same features.
    NoGradGuard ng;
    const double total = to_device(to_dtype(sum(q), DType::Float64), Device{}).item<double>() * 1e7;
    const auto qseed = static_cast<int32_t>(std::clamp(std::ceil(total), -2147483648.0, 2147483647.0));
    copy_(features, orthogonal_features(cfg_.features, cfg_.dim / cfg_.heads,
                                        cfg_.seed + static_cast<uint64_t>(static_cast<uint32_t>(qseed)), cfg_.dtype));
  } else if (is_training() && features.defined()) {
    // The redraw schedule: forward n (from 0) of training uses draw floor(n / redraw_interval).
    NoGradGuard ng;
    const int64_t n = to_device(draws, Device{}).item<int64_t>();
    if (cfg_.redraw_interval > 0 && n > 0 && n % cfg_.redraw_interval == 0)
      copy_(features, orthogonal_features(cfg_.features, cfg_.dim / cfg_.heads,
                                          cfg_.seed + static_cast<uint64_t>(n / cfg_.redraw_interval), cfg_.dtype));
    fill_(draws, static_cast<double>(n + 1));
  }
  // Padded keys are zeroed before the feature map (they are masked after it too).
  const Tensor k = split_heads(zero_padded(wk->forward(x), valid), H);
  const Tensor v = split_heads(zero_padded(wv->forward(x), valid), H);
  const Tensor pq = phi(q, true), pk = phi(k, false, valid, cfg_.causal);
  const Tensor a = cfg_.fused ? linear_attention(pq, pk, v, valid, cfg_.causal)
                              : linear_attention_reference(pq, pk, v, valid, cfg_.causal);
  return zero_padded(wo->forward(merge_heads(a)), valid);
}

}  // namespace hkt::nn

// --- The options of kinds "local" and "performer" (ClassifierConfig::attention) ---

namespace hkt::nn {
namespace {
// The largest window and feature count (about a million: ClassifierConfig's kMaxLen and kMaxFeatures).
constexpr int64_t kMaxWindow = int64_t{1} << 20, kMaxPerformerFeatures = int64_t{1} << 20;

const detail::OptionFields<LocalOptions>& local_fields() {
  static const detail::OptionFields<LocalOptions> f = {{"window", &LocalOptions::window}};
  return f;
}
const detail::OptionFields<PerformerOptions>& performer_fields() {
  static const detail::OptionFields<PerformerOptions> f = {{"features", &PerformerOptions::features},
                                                           {"feature_map", &PerformerOptions::feature_map},
                                                           {"redraw_interval", &PerformerOptions::redraw_interval}};
  return f;
}
}  // namespace

HKT_KIND_OPTIONS_JSON(LocalOptions, local_fields())
HKT_KIND_OPTIONS_JSON(PerformerOptions, performer_fields())

void LocalOptions::validate(const char* who, int64_t) const {
  HKT_CHECK(window >= 0, who, "window must be >= 0 (the local attention's half-width), got ", window);
  HKT_CHECK(window <= kMaxWindow, who, "window must be <= ", kMaxWindow, ", got ", window);
}

void PerformerOptions::validate(const char* who, int64_t) const {
  HKT_CHECK(features >= 1, who, "features must be >= 1 (Performer's features per head), got ", features);
  HKT_CHECK(feature_map == "favor+" || feature_map == "elu+1", who,
            "feature_map must be \"favor+\" or \"elu+1\", got \"", feature_map, "\"");
  HKT_CHECK(redraw_interval >= -1, who,
            "redraw_interval must be >= 0 (0: never redraw) or -1 (every call), got ", redraw_interval);
  HKT_CHECK(features <= kMaxPerformerFeatures, who, "features must be <= ", kMaxPerformerFeatures, ", got ", features);
}

}  // namespace hkt::nn
