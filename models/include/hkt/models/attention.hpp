// Attention layers: the Hierarchical Kernel Transformer (HKT) attention and
// the standard multi-head attention (MHA) baseline. Both map x [B, T, D] to
// [B, T, D]; the definition is docs/hkt.md. The attention core runs
// in the fused kernel by default (never forming T x T matrices); with
// `fused = false` it is the composite reference built from plain ops, which
// the fused kernel is tested against. inspect() always uses the composite.
//
// Masks: `valid` is an optional Bool [B, T], true at real tokens and false at
// padding. Padded keys are masked at every level, padded positions are zeroed
// before each downsampling convolution and before the convolution branch, and
// the outputs at padded positions are zero. A query whose keys are all masked
// gets attention 0, never NaN. In causal mode key j > i is masked as well.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hkt/models/attention_spec.hpp"
#include "hkt/models/layers.hpp"
#include "hkt/models/module.hpp"

namespace hkt::nn {

struct AttentionConfig {
  int64_t dim = 64;    // D
  int64_t heads = 4;   // H; D must be divisible by H
  bool causal = false; // false: bidirectional (the default for classification)
  bool bias = false;   // biases on the q/k/v/output projections (the spec has none)
  bool fused = true;   // the fused O(T)-memory kernel (hkt/ops/attention.hpp) and, for HKT, the fused
                       // hybrid gate (gated_mix); false = the composite reference built from plain
                       // ops, which forms the T x T matrices
  DType dtype = DType::Float32;
  Generator* gen = nullptr;  // initial values; null = the global generator
};

struct HKTConfig : AttentionConfig {
  int64_t levels = 3;             // L >= 1 (level 0 = full resolution)
  bool share_qk = false;          // one Wq, Wk for every level (ablation)
  bool pointwise = true;          // D x D pointwise map in the downsampler (off = ablation)
  bool learn_lambda = true;       // lambda = softmax(theta) learned; off = fixed 1/L (ablation)
  bool hybrid = true;             // beta * attention + (1 - beta) * conv(V); off = beta fixed to 1 (ablation)
  bool conv_only = false;         // beta fixed to 0: the output is Wo conv(V) only, and the layer has no
                                  // Wq, Wk, downsamplers, theta or gate (ablation; needs hybrid)
  int64_t conv_kernel = 3;        // the hybrid branch's causal depthwise conv (stride 1)
};

// The options of the classifier's attention kinds "hkt" (HKTConfig's own fields, the same
// defaults) and "mha" (none), ClassifierConfig::attention (hkt/models/attention_spec.hpp).
struct HKTOptions final : KindOptionsOf<HKTOptions> {
  static constexpr const char* kKind = "hkt";
  int64_t levels = 3;
  bool share_qk = false;
  bool pointwise = true;
  bool learn_lambda = true;
  bool hybrid = true;
  bool conv_only = false;
  void write(nlohmann::ordered_json& j) const override;
  bool read(const std::string& key, const nlohmann::ordered_json& v) override;
  void validate(const char* who, int64_t max_len) const override;
  int64_t matrices() const override { return 4 + 3 * levels; }  // Wq_l, Wk_l, pointwise map per level
  bool operator==(const HKTOptions&) const = default;
};
struct MHAOptions final : KindOptionsOf<MHAOptions> {
  static constexpr const char* kKind = "mha";
  void write(nlohmann::ordered_json&) const override {}
  bool read(const std::string&, const nlohmann::ordered_json&) override { return false; }
  void validate(const char*, int64_t) const override {}
  bool operator==(const MHAOptions&) const = default;
};

// The resolution levels of an attention's scores: HKT's L, 1 for every other kind.
inline int64_t score_levels(const AttentionSpec& a) {
  const HKTOptions* h = a.find<HKTOptions>();
  return h ? h->levels : 1;
}

// One resolution level's causal downsampler (levels l >= 1):
//   X_l = GELU(LayerNorm(Pointwise(DepthwiseCausalConv(X_{l-1}; k = 3, stride 2))))
class Downsample : public Layer {
 public:
  Downsample(int64_t dim, bool pointwise, LayerOptions opt);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<CausalDepthwiseConv1d> conv;
  std::shared_ptr<Linear> pw;  // null when the pointwise map is off
  std::shared_ptr<LayerNorm> ln;
};

// What HKTAttention::inspect returns for one input (for analysis).
struct HKTScores {
  std::vector<Tensor> levels;  // S_l [B, H, T_l, T_l], l = 0..L-1
  Tensor combined;             // S_hier [B, H, T, T] (before the mask)
  Tensor lambda;               // [H, L]
  Tensor beta;                 // [H]
};

class HKTAttention : public Module {
 public:
  explicit HKTAttention(const HKTConfig& cfg);
  Tensor forward(const Tensor& x, const Tensor& valid = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& valid = Tensor()) { return forward(x, valid); }

  const HKTConfig& config() const { return cfg_; }
  // lambda = softmax(theta) per head [H, L] (uniform 1/L when not learned).
  Tensor lambda() const;
  // beta = sigmoid(b) per head [H] (ones when the hybrid branch is off, zeros when conv_only).
  Tensor beta() const;
  // Level l's projections as [D, D] matrices acting on row vectors (Q = X Wq).
  Tensor wq(int64_t level) const;
  Tensor wk(int64_t level) const;
  // Scores of every level and their combination for an input (no gradient); a conv_only layer has
  // none and raises an hkt::Error.
  HKTScores inspect(const Tensor& x, const Tensor& valid = Tensor());

  // Parameters (names as registered): wq.<l>, wk.<l> (one entry when shared),
  // wv, wo, down.<l-1> for l >= 1, theta [H, L], gate [H] (b), conv; conv_only: wv, wo, conv.
  std::shared_ptr<ModuleList> wq_list, wk_list, down;
  std::shared_ptr<Linear> wv, wo;
  std::shared_ptr<CausalDepthwiseConv1d> conv;  // null when hybrid is off
  Tensor theta, gate;                           // theta undefined when lambda is fixed; gate when not hybrid

 private:
  // The levels X_0..X_{L-1} and their validity masks.
  void pyramid(const Tensor& x, const Tensor& valid, std::vector<Tensor>& xs, std::vector<Tensor>& vs) const;
  // S_hier from the levels; the per-level S_l go to *levels when given.
  Tensor combined_scores(const std::vector<Tensor>& xs, int64_t T, std::vector<Tensor>* levels) const;
  HKTConfig cfg_;
};

class MultiHeadAttention : public Module {
 public:
  explicit MultiHeadAttention(const AttentionConfig& cfg);
  Tensor forward(const Tensor& x, const Tensor& valid = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& valid = Tensor()) { return forward(x, valid); }
  const AttentionConfig& config() const { return cfg_; }
  std::shared_ptr<Linear> wq, wk, wv, wo;

 private:
  AttentionConfig cfg_;
};

// Score FLOPs (multiply-adds counted as 2) of the Q K^T products:
// per level 2 * B * H * T_l^2 * dh with T_l = ceil(T / 2^l).
struct ScoreCost {
  std::vector<double> per_level;
  double total = 0;
  double mha = 0;    // 2 * B * H * T^2 * dh
  double ratio = 0;  // total / mha; (4/3)(1 - 4^-L) when 2^(L-1) divides T
};
ScoreCost score_flops(int64_t B, int64_t T, int64_t D, int64_t H, int64_t L);

}  // namespace hkt::nn
