// The efficient attentions HKT is measured against: sliding-window (local)
// attention and Performer (linear attention with random or elu + 1
// features). Both map x [B, T, D] to [B, T, D] with the same Wq, Wk, Wv, Wo
// projections as MultiHeadAttention (4 D^2 parameters, plus biases when
// asked), masks as in attention.hpp (padded keys masked, outputs at padded
// positions zero, a query with no visible key gets 0). Cost formulas:
// docs/models.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "hkt/models/attention.hpp"

namespace hkt::nn {

struct LocalConfig : AttentionConfig {
  int64_t window = 64;  // w >= 0: query i sees keys |i - j| <= w (causal: i - w <= j <= i)
};

// The options of attention kind "local" (ClassifierConfig::attention).
struct LocalOptions final : KindOptionsOf<LocalOptions> {
  static constexpr const char* kKind = "local";
  int64_t window = 64;
  void write(nlohmann::ordered_json& j) const override;
  bool read(const std::string& key, const nlohmann::ordered_json& v) override;
  void validate(const char* who, int64_t max_len) const override;
  bool operator==(const LocalOptions&) const = default;
};

// Sliding-window attention: the fused CPU op local_attention (O(T w) time,
// O(T) memory; CPU only), or with fused = false the composite band-mask
// reference.
class LocalAttention : public Module {
 public:
  explicit LocalAttention(const LocalConfig& cfg);
  Tensor forward(const Tensor& x, const Tensor& valid = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& valid = Tensor()) { return forward(x, valid); }
  const LocalConfig& config() const { return cfg_; }
  std::shared_ptr<Linear> wq, wk, wv, wo;

 private:
  LocalConfig cfg_;
};

struct PerformerConfig : AttentionConfig {
  // m >= 1 random features per head (FAVOR+). 256: the default of google-research/performer's
  // fast_attention (nb_features), which LRA's Performer ran, and the tasks here are LRA's;
  // the paper's rate m = Theta(dh log dh) would give about 111 at dh = 32 (docs/models.md).
  int64_t features = 256;
  std::string feature_map = "favor+";   // "favor+" (positive orthogonal random features) or "elu+1"
  // FAVOR+'s redraws: N > 0: new features every N training forwards (evaluation keeps the last
  // draw; the count is the buffer "draws"); 0: never; -1: on every call, training and
  // evaluation, seeded from the call's queries (LRA's JAX code, redraw_features=True).
  int64_t redraw_interval = 1000;
  uint64_t seed = 0;                    // the features of draw n come from seed + n (orthogonal_features)
  double epsilon = 1e-6;                // FAVOR+'s additive stabiliser (favor_features; the JAX code's 1e-6)
};

// The options of attention kind "performer" (ClassifierConfig::attention). The default m
// here stays 64 because every archived config (of every kind) holds it and the "finished"
// check of resumed runs compares configs rebuilt from these defaults; the performer-small
// preset sets the Performer default, 256 (PerformerConfig::features says why).
struct PerformerOptions final : KindOptionsOf<PerformerOptions> {
  static constexpr const char* kKind = "performer";
  int64_t features = 64;
  std::string feature_map = "favor+";
  int64_t redraw_interval = 1000;
  void write(nlohmann::ordered_json& j) const override;
  bool read(const std::string& key, const nlohmann::ordered_json& v) override;
  void validate(const char* who, int64_t max_len) const override;
  bool operator==(const PerformerOptions&) const = default;
};

// Performer attention: phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1) per head
// (hkt/ops/linear_attention.hpp), causal by prefix sums; O(T) memory, a
// composite of existing ops (so it runs on any device). FAVOR+'s projection
// [m, dh] is shared by the heads and kept in the buffer "features"; the
// number of training forwards so far is the buffer "draws" (int64 [1]): both
// are in checkpoints, so a resumed run redraws on the same schedule. With
// fused = false the core is the T x T reference.
class PerformerAttention : public Module {
 public:
  explicit PerformerAttention(const PerformerConfig& cfg);
  Tensor forward(const Tensor& x, const Tensor& valid = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& valid = Tensor()) { return forward(x, valid); }
  const PerformerConfig& config() const { return cfg_; }
  // The feature maps of queries and keys [B, H, T, dh] -> [B, H, T, m] (keys: valid leaves the
  // padded keys out of the stabiliser; causal: the keys' data-independent stabiliser).
  Tensor phi(const Tensor& x, bool is_query, const Tensor& valid = Tensor(), bool causal = false) const;
  std::shared_ptr<Linear> wq, wk, wv, wo;
  Tensor features, draws;  // buffers (features undefined for elu+1)

 private:
  PerformerConfig cfg_;
};

}  // namespace hkt::nn
