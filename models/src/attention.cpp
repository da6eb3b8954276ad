// HKT attention and the MHA baseline, composed from plain ops (the reference
// for the fused kernels). Shapes: B batch, T length, D width, H heads,
// dh = D / H, L levels, T_l = ceil(T / 2^l).
#include "hkt/models/attention.hpp"

#include <cmath>
#include <limits>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/attention.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"
#include "attention_util.hpp"
#include "option_fields.hpp"

namespace hkt::nn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using detail::check_config;
using detail::check_inputs;
using detail::merge_heads;
using detail::split_heads;
using detail::zero_padded;

// softmax(scores + mask) V over the last dim, with -inf at padded keys and,
// in causal mode, at j > i. A row with every key masked gives 0.
Tensor masked_attention(Tensor scores, const Tensor& valid, bool causal, const Tensor& v) {
  const int64_t T = scores.size(-1);
  if (valid.defined()) scores = masked_fill(scores, unsqueeze(unsqueeze(eq(valid, 0.0), 1), 1), -kInf);
  if (causal) {
    const Tensor i = arange(T, {DType::Int64, scores.device()});
    scores = masked_fill(scores, gt(reshape(i, {1, T}), reshape(i, {T, 1})), -kInf);
  }
  return matmul(softmax(scores, -1), v);
}

// Level validity: a block is real if any of the two blocks below it is.
Tensor pool_valid(const Tensor& v) {
  Tensor f = to_dtype(v, DType::Float32);
  const int64_t B = v.size(0), T = v.size(1);
  if (T % 2) f = cat({f, zeros({B, 1}, {DType::Float32, v.device()})}, 1);
  return gt(max(reshape(f, {B, (T + 1) / 2, 2}), {2}), 0.5);
}

// Row/column index of level l used by full-resolution position i, and
// whether that term exists (causal: c_l(i) = floor((i + 1) / 2^l) - 1 >= 0).
struct LevelIndex {
  Tensor idx;   // Int64 [T]
  Tensor drop;  // Bool [T, T], true where the term is 0 (causal only)
};
LevelIndex level_index(int64_t T, int64_t l, bool causal, Device dev) {
  std::vector<int64_t> idx(static_cast<size_t>(T));
  std::vector<int64_t> missing(static_cast<size_t>(T), 0);
  for (int64_t i = 0; i < T; ++i) {
    const int64_t c = causal ? ((i + 1) >> l) - 1 : (i >> l);
    idx[i] = c < 0 ? 0 : c;
    missing[i] = c < 0;
  }
  LevelIndex r{from_vector(idx, {T}, {DType::Int64, dev}), Tensor()};
  if (causal) {
    const Tensor m = gt(from_vector(missing, {T}, {DType::Int64, dev}), 0.0);
    const Tensor mf = to_dtype(m, DType::Float32);
    r.drop = gt(reshape(mf, {T, 1}) + reshape(mf, {1, T}), 0.5);
  }
  return r;
}

}  // namespace

Downsample::Downsample(int64_t dim, bool pointwise, LayerOptions opt) : Layer("Downsample") {
  conv = register_module("conv", std::make_shared<CausalDepthwiseConv1d>(dim, 3, 2, true, opt));
  if (pointwise) pw = register_module("pw", std::make_shared<Linear>(dim, dim, true, opt));
  ln = register_module("ln", std::make_shared<LayerNorm>(dim, 1e-5, true, opt));
}

Tensor Downsample::forward(const Tensor& x) {
  Tensor h = conv->forward(x);
  if (pw) h = pw->forward(h);
  return gelu(ln->forward(h));
}

HKTAttention::HKTAttention(const HKTConfig& cfg) : Module("HKTAttention"), cfg_(cfg) {
  check_config(cfg, "HKTAttention");
  HKT_CHECK(cfg.levels >= 1, "HKTAttention: levels must be >= 1, got ", cfg.levels);
  HKT_CHECK(cfg.conv_kernel >= 1, "HKTAttention: conv_kernel must be >= 1, got ", cfg.conv_kernel);
  HKT_CHECK(!cfg.conv_only || cfg.hybrid, "HKTAttention: conv_only needs the hybrid branch (hybrid = true)");
  const LayerOptions o{cfg.dtype, cfg.gen};
  const int64_t D = cfg.dim, L = cfg.levels;
  wq_list = register_module("wq", std::make_shared<ModuleList>());
  wk_list = register_module("wk", std::make_shared<ModuleList>());
  if (cfg.conv_only) {
    // beta = 0: out = Wo conv(Wv x). The attention's maps would get no gradient, so they do not exist.
    wv = register_module("wv", std::make_shared<Linear>(D, D, cfg.bias, o));
    wo = register_module("wo", std::make_shared<Linear>(D, D, cfg.bias, o));
    down = register_module("down", std::make_shared<ModuleList>());
    conv = register_module("conv", std::make_shared<CausalDepthwiseConv1d>(D, cfg.conv_kernel, 1, false, o));
    return;
  }
  for (int64_t l = 0; l < (cfg.share_qk ? 1 : L); ++l) {
    wq_list->push_back(std::make_shared<Linear>(D, D, cfg.bias, o));
    wk_list->push_back(std::make_shared<Linear>(D, D, cfg.bias, o));
  }
  wv = register_module("wv", std::make_shared<Linear>(D, D, cfg.bias, o));
  wo = register_module("wo", std::make_shared<Linear>(D, D, cfg.bias, o));
  down = register_module("down", std::make_shared<ModuleList>());
  for (int64_t l = 1; l < L; ++l) down->push_back(std::make_shared<Downsample>(D, cfg.pointwise, o));
  if (cfg.learn_lambda) theta = register_parameter("theta", zeros({cfg.heads, L}, {cfg.dtype}));
  if (cfg.hybrid) {
    gate = register_parameter("gate", zeros({cfg.heads}, {cfg.dtype}));
    conv = register_module("conv", std::make_shared<CausalDepthwiseConv1d>(D, cfg.conv_kernel, 1, false, o));
  }
}

Tensor HKTAttention::lambda() const {
  if (theta.defined()) return softmax(theta, -1);
  return full({cfg_.heads, cfg_.levels}, 1.0 / static_cast<double>(cfg_.levels), {cfg_.dtype, wv->weight.device()});
}

Tensor HKTAttention::beta() const {
  if (cfg_.conv_only) return zeros({cfg_.heads}, {cfg_.dtype, wv->weight.device()});
  return gate.defined() ? sigmoid(gate) : ones({cfg_.heads}, {cfg_.dtype, wv->weight.device()});
}

Tensor HKTAttention::wq(int64_t level) const {
  HKT_CHECK(level >= 0 && level < cfg_.levels, "HKTAttention::wq: level ", level, " out of range [0, ",
            cfg_.levels, ")");
  HKT_CHECK(!cfg_.conv_only, "HKTAttention::wq: a conv_only layer has no Wq");
  return clone(transpose(wq_list->at<Linear>(cfg_.share_qk ? 0 : level)->weight, 0, 1).detach());
}

Tensor HKTAttention::wk(int64_t level) const {
  HKT_CHECK(level >= 0 && level < cfg_.levels, "HKTAttention::wk: level ", level, " out of range [0, ",
            cfg_.levels, ")");
  HKT_CHECK(!cfg_.conv_only, "HKTAttention::wk: a conv_only layer has no Wk");
  return clone(transpose(wk_list->at<Linear>(cfg_.share_qk ? 0 : level)->weight, 0, 1).detach());
}

void HKTAttention::pyramid(const Tensor& x, const Tensor& valid, std::vector<Tensor>& xs,
                           std::vector<Tensor>& vs) const {
  xs = {x};
  vs = {valid};
  for (int64_t l = 1; l < cfg_.levels; ++l) {
    // Padded positions are zeroed before each downsampling convolution.
    xs.push_back(down->at<Downsample>(static_cast<size_t>(l - 1))->forward(zero_padded(xs.back(), vs.back())));
    vs.push_back(valid.defined() ? pool_valid(vs.back()) : Tensor());
  }
}

Tensor HKTAttention::combined_scores(const std::vector<Tensor>& xs, int64_t T, std::vector<Tensor>* levels) const {
  const int64_t H = cfg_.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.dim / H));
  const Tensor lam = lambda();
  Tensor s_hier;
  for (int64_t l = 0; l < cfg_.levels; ++l) {
    const size_t w = cfg_.share_qk ? 0 : static_cast<size_t>(l);
    const Tensor q = split_heads(wq_list->at<Linear>(w)->forward(xs[l]), H);
    const Tensor k = split_heads(wk_list->at<Linear>(w)->forward(xs[l]), H);
    // S_l = Q_l K_l^T / sqrt(dh)   [B, H, T_l, T_l]
    Tensor s = matmul(q, transpose(k, -2, -1)) * scale;
    if (levels) levels->push_back(s);
    // Up_l(S_l)[i, j] = S_l[idx(i), idx(j)], zero where a causal block is missing.
    if (l > 0) {
      const LevelIndex li = level_index(T, l, cfg_.causal, s.device());
      s = index_select(index_select(s, 2, li.idx), 3, li.idx);
      if (li.drop.defined()) s = masked_fill(s, li.drop, 0.0);
    }
    // S_hier = sum_l lambda_l Up_l(S_l), lambda per head
    const Tensor term = reshape(select(lam, 1, l), {1, H, 1, 1}) * s;
    s_hier = l == 0 ? term : s_hier + term;
  }
  return s_hier;
}

HKTScores HKTAttention::inspect(const Tensor& x, const Tensor& valid) {
  check_inputs(x, valid, cfg_.dim, "HKTAttention");
  HKT_CHECK(!cfg_.conv_only, "HKTAttention::inspect: a conv_only layer (beta = 0) has no attention scores");
  NoGradGuard ng;
  std::vector<Tensor> xs, vs;
  pyramid(x, valid, xs, vs);
  HKTScores r;
  r.lambda = lambda();
  r.beta = beta();
  r.combined = combined_scores(xs, x.size(1), &r.levels);
  return r;
}

Tensor HKTAttention::forward(const Tensor& x, const Tensor& valid) {
  check_inputs(x, valid, cfg_.dim, "HKTAttention");
  const int64_t H = cfg_.heads;
  if (cfg_.conv_only) return zero_padded(wo->forward(conv->forward(zero_padded(wv->forward(x), valid))), valid);
  std::vector<Tensor> xs, vs;
  pyramid(x, valid, xs, vs);
  // Full-resolution values; padded values are zeroed (they feed the conv branch).
  const Tensor v = zero_padded(wv->forward(x), valid);
  Tensor out;
  if (cfg_.fused) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.dim / H));
    std::vector<Tensor> qs, ks;
    for (int64_t l = 0; l < cfg_.levels; ++l) {
      const size_t w = cfg_.share_qk ? 0 : static_cast<size_t>(l);
      qs.push_back(split_heads(wq_list->at<Linear>(w)->forward(xs[l]), H));
      ks.push_back(split_heads(wk_list->at<Linear>(w)->forward(xs[l]), H));
    }
    out = hkt_attention(qs, ks, split_heads(v, H), lambda(), valid, cfg_.causal, scale);
  } else {
    out = masked_attention(combined_scores(xs, x.size(1), nullptr), valid, cfg_.causal, split_heads(v, H));
  }
  if (cfg_.hybrid) {
    // out_h = beta_h * A_h + (1 - beta_h) * CausalDepthwiseConv(V)_h
    if (cfg_.fused) {
      // One fused op on the merged heads [B, T, D]: beta repeated over each head's dh channels.
      const int64_t dh = cfg_.dim / H;
      const Tensor bc = reshape(expand(reshape(sigmoid(gate), {H, 1}), {H, dh}), {cfg_.dim});
      return zero_padded(wo->forward(gated_mix(merge_heads(out), conv->forward(v), bc)), valid);
    }
    const Tensor b = reshape(sigmoid(gate), {1, H, 1, 1});
    out = b * out + (1.0 - b) * split_heads(conv->forward(v), H);
  }
  return zero_padded(wo->forward(merge_heads(out)), valid);
}

MultiHeadAttention::MultiHeadAttention(const AttentionConfig& cfg) : Module("MultiHeadAttention"), cfg_(cfg) {
  check_config(cfg, "MultiHeadAttention");
  const LayerOptions o{cfg.dtype, cfg.gen};
  wq = register_module("wq", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wk = register_module("wk", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wv = register_module("wv", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
  wo = register_module("wo", std::make_shared<Linear>(cfg.dim, cfg.dim, cfg.bias, o));
}

Tensor MultiHeadAttention::forward(const Tensor& x, const Tensor& valid) {
  check_inputs(x, valid, cfg_.dim, "MultiHeadAttention");
  const int64_t H = cfg_.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.dim / H));
  const Tensor q = split_heads(wq->forward(x), H), k = split_heads(wk->forward(x), H);
  const Tensor v = zero_padded(wv->forward(x), valid);
  const Tensor a = cfg_.fused ? mha_attention(q, k, split_heads(v, H), valid, cfg_.causal, scale)
                              : masked_attention(matmul(q, transpose(k, -2, -1)) * scale, valid, cfg_.causal,
                                                 split_heads(v, H));
  return zero_padded(wo->forward(merge_heads(a)), valid);
}

}  // namespace hkt::nn

// --- The options of kinds "hkt" and "mha" (ClassifierConfig::attention) -------

namespace hkt::nn {
namespace {
const detail::OptionFields<HKTOptions>& hkt_fields() {
  static const detail::OptionFields<HKTOptions> f = {
      {"levels", &HKTOptions::levels},       {"share_qk", &HKTOptions::share_qk}, {"pointwise", &HKTOptions::pointwise},
      {"learn_lambda", &HKTOptions::learn_lambda}, {"hybrid", &HKTOptions::hybrid}, {"conv_only", &HKTOptions::conv_only},
  };
  return f;
}
}  // namespace

HKT_KIND_OPTIONS_JSON(HKTOptions, hkt_fields())

void HKTOptions::validate(const char* who, int64_t max_len) const {
  HKT_CHECK(levels >= 1, who, "levels must be >= 1, got ", levels);
  HKT_CHECK(!conv_only || hybrid, who, "conv_only needs attention \"hkt\" with hybrid = true, got attention \"hkt\", ",
            "hybrid = false");
  // Level l pools blocks of 2^(l-1) positions: beyond floor(log2(T)) + 1 a level has one block or none.
  int64_t max_levels = 1;
  while (max_levels < 62 && (int64_t{1} << max_levels) <= max_len) ++max_levels;
  HKT_CHECK(levels <= max_levels, who, "levels must be <= floor(log2(max_len)) + 1 = ", max_levels,
            " for max_len (T) ", max_len, ", got ", levels);
}

}  // namespace hkt::nn
