// HTransformerAttention: MultiHeadAttention's projections around htransformer_attention.
#include "hkt/models/htransformer.hpp"

#include <cmath>

#include "hkt/core/error.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/htransformer.hpp"
#include "hkt/ops/view.hpp"

namespace hkt::nn {
namespace {

constexpr const char* kWho = "HTransformerAttention";

Tensor split_heads(const Tensor& x, int64_t H) {  // [B, T, D] -> [B, H, T, dh]
  return permute(reshape(x, {x.size(0), x.size(1), H, x.size(2) / H}), {0, 2, 1, 3});
}
Tensor merge_heads(const Tensor& x) {  // [B, H, T, dh] -> [B, T, D]
  return reshape(permute(x, {0, 2, 1, 3}), {x.size(0), x.size(2), x.size(1) * x.size(3)});
}
Tensor zero_padded(const Tensor& x, const Tensor& valid) {
  return valid.defined() ? x * to_dtype(unsqueeze(valid, -1), x.dtype()) : x;
}

}  // namespace

HTransformerAttention::HTransformerAttention(const HTransformerConfig& cfg) : Module(kWho), cfg_(cfg) {
  HKT_CHECK(cfg.dim > 0 && cfg.heads > 0 && cfg.dim % cfg.heads == 0, kWho, ": dim (", cfg.dim,
            ") must be a positive multiple of heads (", cfg.heads, ")");
  HKT_CHECK(cfg.block >= 1, kWho, ": block must be >= 1, got ", cfg.block);
  HKT_CHECK(cfg.levels >= 0, kWho, ": levels must be >= 1 (or 0: as many as T needs), got ", cfg.levels);
  const LayerOptions o{cfg.dtype, cfg.gen};
  wq = register_module("wq", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wk = register_module("wk", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wv = register_module("wv", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wo = register_module("wo", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
}

Tensor HTransformerAttention::forward(const Tensor& x, const Tensor& valid) {
  HKT_CHECK(x.dim() == 3 && x.size(2) == cfg_.dim, kWho, ": x must be [B, T, ", cfg_.dim, "], got ",
            shape_str(x.shape()));
  HKT_CHECK(x.size(1) >= 1, kWho, ": the sequence is empty (T = 0)");
  if (valid.defined())
    HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{x.size(0), x.size(1)}), kWho,
              ": valid must be Bool [", x.size(0), ", ", x.size(1), "], got ", valid.dtype(),
              shape_str(valid.shape()));
  const int64_t H = cfg_.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.dim / H));
  const Tensor q = split_heads(wq->forward(x), H), k = split_heads(wk->forward(x), H);
  const Tensor v = split_heads(zero_padded(wv->forward(x), valid), H);
  const Tensor a = cfg_.fused
                       ? htransformer_attention(q, k, v, valid, cfg_.causal, scale, cfg_.block, cfg_.levels)
                       : htransformer_attention_reference(q, k, v, valid, cfg_.causal, scale, cfg_.block, cfg_.levels);
  return zero_padded(wo->forward(merge_heads(a)), valid);
}

}  // namespace hkt::nn
