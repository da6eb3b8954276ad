// The sequence classifier of docs/hkt.md:
//
//   input map      token embedding (vocab > 0) or a linear map of real-valued
//                  features (input_features > 0, e.g. RGB pixels)
//   + learned positional embedding [max_len, D]
//   N pre-LN blocks    x += Attn(LN(x)); x += FFN(LN(x))   (FFN = Linear(D, 4D), GELU, Linear(4D, D), dropout)
//   final LayerNorm, mean pooling over non-pad positions, linear head to C classes.
//
// Attn is HKTAttention, MultiHeadAttention (the baseline), LocalAttention,
// PerformerAttention (hkt/models/efficient_attention.hpp) or
// HTransformerAttention (hkt/models/htransformer.hpp), chosen by the config's
// `attention` through the table of hkt/models/attention_kinds.hpp.
//
// Parameter names, in order (a module's own parameters come before its
// children's): pos, embed.weight (or input_map.weight, input_map.bias),
// blocks.<i>.ln1.*, blocks.<i>.attn.* (see attention.hpp), blocks.<i>.ln2.*,
// blocks.<i>.ffn.fc1.*, blocks.<i>.ffn.fc2.*, ln_f.*, head.weight, head.bias.
// Initial values: embed.weight and pos ~ N(0, 0.02); every other layer keeps
// its default (layers.hpp); all drawn from the generator given to the
// constructor (the global one when null), so the same seed gives the same
// model bit for bit. docs/hkt.md has the parameter counts of the presets.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "hkt/models/attention.hpp"
#include "hkt/models/attention_spec.hpp"
#include "hkt/models/layers.hpp"
#include "hkt/models/module.hpp"

namespace hkt::nn {

struct ClassifierConfig {
  // The attention: its kind and that kind's typed options, causal and projection biases
  // (hkt/models/attention_spec.hpp; the kinds: hkt/models/attention_kinds.hpp).
  AttentionSpec attention;
  int64_t vocab = 0;              // > 0: Int64 token inputs [B, T]
  int64_t input_features = 0;     // > 0: real-valued inputs [B, T, F]
  int64_t max_len = 512;          // positional embedding size; T <= max_len
  int64_t dim = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t ffn_mult = 4;
  double dropout = 0.1;
  int64_t classes = 2;
  DType dtype = DType::Float32;

  // Throws hkt::Error naming the first invalid field. Sizes have stated
  // limits (below), checked before anything is allocated; HKT's levels are at
  // most floor(log2(max_len)) + 1 (a level beyond has a single block).
  void validate() const;
  static constexpr int64_t kMaxVocab = int64_t{1} << 24, kMaxFeatures = int64_t{1} << 20,
                           kMaxLen = int64_t{1} << 20, kMaxDim = int64_t{1} << 16, kMaxHeads = 1024,
                           kMaxLayers = 1024, kMaxFfnMult = 64, kMaxClasses = int64_t{1} << 20,
                           kMaxParams = int64_t{1} << 32;  // about, from the largest layers
  // JSON text, one flat object: "attention" (the kind's name), the shared fields, "causal",
  // "bias", then every kind's keys in the table's order (this kind's options, the others'
  // defaults: the layout of every archived config), dtype as "float32"/"float64". Reading:
  // unknown keys and wrong types are errors, and so is another kind's key away from its
  // default (an option this model would ignore).
  std::string to_json() const;
  static ClassifierConfig from_json(const std::string& json);
  // How many times from_json has run in this process: a start reads its model's config
  // once, at the file boundary (tests count it).
  static int64_t from_json_count();
  // Missing keys keep their defaults; the result is not validated (the
  // classifier's constructor does that).
  //
  // Named presets: "hkt-small", "mha-small", "mha-matched" (mha-small with a
  // 7D FFN, parameter-matched to hkt-small), "local-small" (window 64) and
  // "performer-small" (256 FAVOR+ features) and "htr-small" (H-Transformer-1D,
  // block size 16, the relative-position bias), matched the same way (a 7D FFN),
  // "hkt-tiny", "mha-tiny" (see
  // docs/models.md for their parameter counts). The task fills in vocab or
  // input_features, classes and max_len.
  static ClassifierConfig preset(const std::string& name);

  bool operator==(const ClassifierConfig&) const = default;
};

// One pre-LN block: x += Attn(LN1(x), valid); x += FFN(LN2(x)), the FFN
// ending in Dropout(cfg.dropout). The attention module is registered as "attn".
class Block : public Module {
 public:
  // `layer`: the block's index (Performer's features differ between blocks).
  explicit Block(const ClassifierConfig& cfg, LayerOptions opt, int64_t layer = 0);
  Tensor forward(const Tensor& x, const Tensor& valid);
  std::shared_ptr<LayerNorm> ln1, ln2;
  std::shared_ptr<Module> attn;             // the attention of cfg.attention; and, typed, for those kinds:
  std::shared_ptr<HKTAttention> hkt;        // set for "hkt"
  std::shared_ptr<MultiHeadAttention> mha;  // set for "mha"
  std::shared_ptr<FeedForward> ffn;

 private:
  std::function<Tensor(Module&, const Tensor&, const Tensor&)> attend_;
};

class SequenceClassifier : public Module {
 public:
  explicit SequenceClassifier(const ClassifierConfig& cfg, Generator* gen = nullptr);
  // Validates cfg (hkt::Error naming the field).
  //
  // inputs: Int64 [B, T] tokens or float [B, T, F] features (converted to
  // cfg.dtype); valid: optional Bool [B, T] (true at real tokens); 1 <= T <=
  // max_len. Returns logits [B, classes]. Pooling: the mean of the final
  // LayerNorm's outputs over the valid positions (over all T without
  // `valid`); a sequence with no valid position pools to zeros (its logits
  // are head.bias), never NaN.
  Tensor forward(const Tensor& inputs, const Tensor& valid = Tensor());
  const ClassifierConfig& config() const { return cfg_; }

  std::shared_ptr<Embedding> embed;   // token inputs
  std::shared_ptr<Linear> input_map;  // real-valued inputs
  Tensor pos;                         // [max_len, D]
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> head;

 private:
  ClassifierConfig cfg_;
};

// Forward FLOPs (multiply-adds counted as 2) of the classifier's products on
// one batch of B sequences of length T, dense (causal masks not discounted),
// by part. The backward of each product costs twice its forward, so a
// training step's products cost about 3x total(). Elementwise work (layer
// norms, softmax, GELU, the optimizer) is not counted.
struct ModelFlops {
  double projections = 0;  // Wq, Wk, Wv, Wo; HKT: Wq_l, Wk_l at every level
  double scores = 0;       // Q_l K_l^T, all levels
  double values = 0;       // P V
  double downsample = 0;   // HKT: the stride-2 depthwise convolutions and pointwise maps
  double hybrid = 0;       // HKT: the depthwise convolution of V (hybrid branch)
  double ffn = 0;
  double other = 0;        // input map of real-valued inputs, classifier head
  double total() const { return projections + scores + values + downsample + hybrid + ffn + other; }
};
ModelFlops model_flops(const ClassifierConfig& cfg, int64_t B, int64_t T);

}  // namespace hkt::nn
