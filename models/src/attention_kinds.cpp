// The table of attention kinds (hkt/models/attention_kinds.hpp).
#include "hkt/models/attention_kinds.hpp"

#include "hkt/models/efficient_attention.hpp"
#include "hkt/models/htransformer.hpp"

namespace hkt::nn {
namespace {

// A kind whose module M is built from the config C that make(cfg, base, layer) returns.
template <class M, class Make>
AttentionKind kind(const char* name, bool cpu_only, Make make) {
  AttentionKind k;
  k.name = name;
  k.cpu_only = cpu_only;
  k.build = [make](const ClassifierConfig& cfg, const AttentionConfig& base, int64_t layer) -> std::shared_ptr<Module> {
    return std::make_shared<M>(make(cfg, base, layer));
  };
  k.forward = [](Module& m, const Tensor& x, const Tensor& valid) { return static_cast<M&>(m).forward(x, valid); };
  return k;
}

// Performer's features: block `layer` draws from seed 1000003 * (layer + 1), so the blocks differ.
constexpr uint64_t kPerformerSeedStride = 1000003;

}  // namespace

const std::vector<AttentionKind>& attention_kinds() {
  static const std::vector<AttentionKind> kinds = {
      kind<HKTAttention>("hkt", false,
                         [](const ClassifierConfig& c, const AttentionConfig& a, int64_t) {
                           HKTConfig h;
                           static_cast<AttentionConfig&>(h) = a;
                           h.levels = c.levels;
                           h.share_qk = c.share_qk;
                           h.pointwise = c.pointwise;
                           h.learn_lambda = c.learn_lambda;
                           h.hybrid = c.hybrid;
                           h.conv_only = c.conv_only;
                           return h;
                         }),
      kind<MultiHeadAttention>("mha", false, [](const ClassifierConfig&, const AttentionConfig& a, int64_t) { return a; }),
      kind<LocalAttention>("local", true,
                           [](const ClassifierConfig& c, const AttentionConfig& a, int64_t) {
                             LocalConfig l;
                             static_cast<AttentionConfig&>(l) = a;
                             l.window = c.window;
                             return l;
                           }),
      kind<PerformerAttention>("performer", false,
                               [](const ClassifierConfig& c, const AttentionConfig& a, int64_t layer) {
                                 PerformerConfig p;
                                 static_cast<AttentionConfig&>(p) = a;
                                 p.features = c.features;
                                 p.feature_map = c.feature_map;
                                 p.redraw_interval = c.redraw_interval;
                                 p.seed = kPerformerSeedStride * static_cast<uint64_t>(layer + 1);
                                 return p;
                               }),
      // On a device without the fused kernels (CUDA) the op runs its composite of plain ops.
      kind<HTransformerAttention>("htransformer", false,
                                  [](const ClassifierConfig& c, const AttentionConfig& a, int64_t) {
                                    HTransformerConfig h;
                                    static_cast<AttentionConfig&>(h) = a;
                                    h.block_size = c.block;
                                    h.relative_bias = c.htr_bias;
                                    return h;
                                  }),
  };
  return kinds;
}

const AttentionKind* find_attention_kind(const std::string& name) {
  for (const AttentionKind& k : attention_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::string attention_kind_names() {
  std::string s;
  for (const AttentionKind& k : attention_kinds()) s += (s.empty() ? "\"" : ", \"") + k.name + "\"";
  return s;
}

}  // namespace hkt::nn
