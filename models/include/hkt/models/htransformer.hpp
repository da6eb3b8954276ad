// H-Transformer-1D attention as a layer (docs/htransformer.md): q/k/v/output
// projections exactly as MultiHeadAttention's (the same names wq, wk, wv, wo,
// shapes and initialisation), with the attention core replaced by
// htransformer_attention (hkt/ops/htransformer.hpp, the authors' layout) and,
// as in the authors' code (use_rpb = True), a learned hierarchical relative-
// position bias `rpb` [heads, 4 block_size - 1], initialised N(0, 0.1^2), one
// scalar per head and signed coarse distance, shared by the levels. Maps
// x [B, T, D] to [B, T, D]; masks as in models/attention.hpp (outputs at padded
// positions are 0). Any T: the op pads to block_size 2^L internally.
#pragma once
#include <cstdint>
#include <memory>

#include "hkt/models/attention.hpp"
#include "hkt/models/layers.hpp"
#include "hkt/models/module.hpp"

namespace hkt::nn {

struct HTransformerConfig : AttentionConfig {
  int64_t block_size = 16;     // Nr (the paper's name): the block of every level, even, >= 2
  bool relative_bias = true;   // the learned hierarchical relative-position bias (the authors' default)
  // AttentionConfig::fused: true (default) = the fused CPU kernels (htransformer_attention),
  // false = the composite of plain ops (htransformer_attention_reference); neither forms T x T.
};

// The options of attention kind "htransformer" (ClassifierConfig::attention): `block` is the
// paper's block size Nr (HTransformerConfig::block_size; the JSON key stays "block" so
// archived configs still parse); htr_levels must be 0 (all levels, the published algorithm;
// the key is kept for archived configs); htr_bias: the learned relative-position bias.
struct HTransformerOptions final : KindOptionsOf<HTransformerOptions> {
  static constexpr const char* kKind = "htransformer";
  int64_t block = 16;
  int64_t htr_levels = 0;
  bool htr_bias = true;
  void write(nlohmann::ordered_json& j) const override;
  bool read(const std::string& key, const nlohmann::ordered_json& v) override;
  void validate(const char* who, int64_t max_len) const override;
  bool operator==(const HTransformerOptions&) const = default;
};

class HTransformerAttention : public Module {
 public:
  explicit HTransformerAttention(const HTransformerConfig& cfg);
  Tensor forward(const Tensor& x, const Tensor& valid = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& valid = Tensor()) { return forward(x, valid); }
  const HTransformerConfig& config() const { return cfg_; }
  std::shared_ptr<Linear> wq, wk, wv, wo;
  Tensor rpb;  // [heads, 4 block_size - 1], undefined when relative_bias is off

 private:
  HTransformerConfig cfg_;
};

}  // namespace hkt::nn
