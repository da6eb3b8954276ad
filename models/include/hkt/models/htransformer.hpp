// H-Transformer-1D attention as a layer (docs/htransformer.md): q/k/v/output
// projections exactly as MultiHeadAttention's (the same names wq, wk, wv, wo,
// shapes and initialisation, so the same parameter count), with the attention
// core replaced by htransformer_attention (hkt/ops/htransformer.hpp): exact
// attention within diagonal blocks of `block` tokens, coarsened off-diagonal
// blocks at each coarser level. Maps x [B, T, D] to [B, T, D]; masks as in
// models/attention.hpp (outputs at padded positions are 0).
#pragma once
#include <cstdint>
#include <memory>

#include "hkt/models/attention.hpp"
#include "hkt/models/layers.hpp"
#include "hkt/models/module.hpp"

namespace hkt::nn {

struct HTransformerConfig : AttentionConfig {
  int64_t block = 16;  // N (the paper's Nr): the diagonal block and every coarse block, >= 1
  int64_t levels = 0;  // levels used; 0 = as many as the length needs (1 = block-diagonal attention)
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

 private:
  HTransformerConfig cfg_;
};

}  // namespace hkt::nn
