// HTransformerAttention: MultiHeadAttention's projections around htransformer_attention, with
// the learned hierarchical relative-position bias.
#include "hkt/models/htransformer.hpp"

#include <cmath>

#include "hkt/core/error.hpp"
#include "hkt/models/init.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/htransformer.hpp"
#include "hkt/ops/view.hpp"
#include "attention_util.hpp"
#include "option_fields.hpp"

namespace hkt::nn {
namespace {

constexpr const char* kWho = "HTransformerAttention";

using detail::merge_heads;
using detail::split_heads;
using detail::zero_padded;

}  // namespace

HTransformerAttention::HTransformerAttention(const HTransformerConfig& cfg) : Module(kWho), cfg_(cfg) {
  detail::check_config(cfg, kWho);
  HKT_CHECK(cfg.block_size >= 2 && cfg.block_size % 2 == 0, kWho, ": block_size (Nr) must be even and >= 2, got ",
            cfg.block_size);
  const LayerOptions o{cfg.dtype, cfg.gen};
  wq = register_module("wq", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wk = register_module("wk", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wv = register_module("wv", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wo = register_module("wo", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  if (cfg.relative_bias) {  // the authors' initialisation: N(0, 0.1^2)
    rpb = register_parameter("rpb", empty({cfg.heads, 4 * cfg.block_size - 1}, {cfg.dtype}));
    init::normal_(rpb, 0.0, 0.1, cfg.gen);
  }
}

Tensor HTransformerAttention::forward(const Tensor& x, const Tensor& valid) {
  detail::check_inputs(x, valid, cfg_.dim, kWho);
  const int64_t H = cfg_.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.dim / H));
  const Tensor q = split_heads(wq->forward(x), H), k = split_heads(wk->forward(x), H);
  const Tensor v = split_heads(zero_padded(wv->forward(x), valid), H);
  const Tensor a = cfg_.fused
                       ? htransformer_attention(q, k, v, valid, cfg_.causal, scale, cfg_.block_size, rpb)
                       : htransformer_attention_reference(q, k, v, valid, cfg_.causal, scale, cfg_.block_size, rpb);
  return zero_padded(wo->forward(merge_heads(a)), valid);
}

}  // namespace hkt::nn

// --- The options of kind "htransformer" (ClassifierConfig::attention) ----------

namespace hkt::nn {
namespace {
const detail::OptionFields<HTransformerOptions>& htr_fields() {
  static const detail::OptionFields<HTransformerOptions> f = {{"block", &HTransformerOptions::block},
                                                              {"htr_levels", &HTransformerOptions::htr_levels},
                                                              {"htr_bias", &HTransformerOptions::htr_bias, true}};
  return f;
}
}  // namespace

HKT_KIND_OPTIONS_JSON(HTransformerOptions, htr_fields())

void HTransformerOptions::validate(const char* who, int64_t) const {
  HKT_CHECK(block >= 2 && block % 2 == 0, who, "block must be even and >= 2 (H-Transformer-1D's block size Nr), got ",
            block);
  HKT_CHECK(htr_levels == 0, who,
            "htr_levels must be 0 (H-Transformer-1D uses every level, as published; the key is kept for archived "
            "configs), got ", htr_levels);
}

}  // namespace hkt::nn
