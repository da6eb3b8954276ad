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
