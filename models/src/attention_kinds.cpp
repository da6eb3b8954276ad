// The table of attention kinds (hkt/models/attention_kinds.hpp), and AttentionSpec's
// construction from a kind's name (hkt/models/attention_spec.hpp).
#include "hkt/models/attention_kinds.hpp"

#include "hkt/models/efficient_attention.hpp"
#include "hkt/models/htransformer.hpp"

namespace hkt::nn {
namespace {

// A kind with options O whose module M is built from the config that make(options, base, layer) returns.
template <class O, class M, class Make>
AttentionKind kind(bool cpu_only, Make make) {
  AttentionKind k;
  k.name = O::kKind;
  k.cpu_only = cpu_only;
  k.defaults = [] { return std::make_unique<O>(); };
  k.build = [make](const KindOptions& o, const AttentionConfig& base, int64_t layer) -> std::shared_ptr<Module> {
    return std::make_shared<M>(make(static_cast<const O&>(o), base, layer));
  };
  k.forward = [](Module& m, const Tensor& x, const Tensor& valid) { return static_cast<M&>(m).forward(x, valid); };
  return k;
}

// The module config C with the shared fields `base`.
template <class C>
C with_base(const AttentionConfig& base) {
  C c;
  static_cast<AttentionConfig&>(c) = base;
  return c;
}

// Performer's features: block `layer` draws from seed 1000003 * (layer + 1), so the blocks differ.
constexpr uint64_t kPerformerSeedStride = 1000003;

HKTConfig hkt_config(const HKTOptions& o, const AttentionConfig& a, int64_t) {
  HKTConfig h = with_base<HKTConfig>(a);
  h.levels = o.levels;
  h.share_qk = o.share_qk;
  h.pointwise = o.pointwise;
  h.learn_lambda = o.learn_lambda;
  h.hybrid = o.hybrid;
  h.conv_only = o.conv_only;
  return h;
}

PerformerConfig performer_config(const PerformerOptions& o, const AttentionConfig& a, int64_t layer) {
  PerformerConfig p = with_base<PerformerConfig>(a);
  p.features = o.features;
  p.feature_map = o.feature_map;
  p.redraw_interval = o.redraw_interval;
  p.seed = kPerformerSeedStride * static_cast<uint64_t>(layer + 1);
  return p;
}

}  // namespace

const std::vector<AttentionKind>& attention_kinds() {
  static const std::vector<AttentionKind> kinds = {
      kind<HKTOptions, HKTAttention>(false, hkt_config),
      kind<MHAOptions, MultiHeadAttention>(false, [](const MHAOptions&, const AttentionConfig& a, int64_t) { return a; }),
      kind<LocalOptions, LocalAttention>(true,
                                         [](const LocalOptions& o, const AttentionConfig& a, int64_t) {
                                           LocalConfig l = with_base<LocalConfig>(a);
                                           l.window = o.window;
                                           return l;
                                         }),
      kind<PerformerOptions, PerformerAttention>(false, performer_config),
      // On a device without the fused kernels (CUDA) the op runs its composite of plain ops.
      kind<HTransformerOptions, HTransformerAttention>(false,
                                                       [](const HTransformerOptions& o, const AttentionConfig& a, int64_t) {
                                                         HTransformerConfig h = with_base<HTransformerConfig>(a);
                                                         h.block_size = o.block;
                                                         h.relative_bias = o.htr_bias;
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

// --- AttentionSpec ----------------------------------------------------------

AttentionSpec::AttentionSpec() : opts_(std::make_shared<HKTOptions>()) {}

AttentionSpec::AttentionSpec(const std::string& kind) {
  const AttentionKind* k = find_attention_kind(kind);
  HKT_CHECK(k, "ClassifierConfig: unknown attention kind '", kind, "' (expected one of ", attention_kind_names(), ")");
  opts_ = k->defaults();
}

KindOptions& AttentionSpec::options() {
  if (opts_.use_count() > 1) opts_ = opts_->clone();
  return *opts_;
}

}  // namespace hkt::nn
