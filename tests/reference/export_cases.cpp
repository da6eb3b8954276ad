// hkt-reference-export OUT_DIR [--device cuda]: writes the cases that tests/reference/check.py
// recomputes with NumPy straight from docs/hkt.md (an implementation
// that shares no code with hkt). One safetensors file per case, in the format's
// official layout, holding:
//
//   param.<name>   every parameter (perturbed from its initial value, so that
//                  lambda, beta and the LayerNorms are not at their trivial start)
//   input.x        the layer's input [B, T, D], or the classifier's input.ids
//                  [B, T] (I64) / input.x [B, T, F]
//   input.valid    BOOL [B, T] (right padding), when the case has a mask
//   output         what hkt computed
//   inspect.*      for HKT layers, what HKTAttention::inspect returns: level.<l>
//                  (S_l), combined (S_hier, before the mask), lambda, beta
//   input.r        R, and grad.<name> = d sum(output * R) / d<name> for every
//                  parameter and for input.x (float64 cases only)
//
// and "__metadata__" {"kind": "hkt" | "mha" | "classifier", "config": JSON,
// "device": "cpu" | "cuda:0"}.
//
// The "train" case is the trainer's step (train_step, tasks/src/train_step.cpp), kTrainSteps
// times on one batch of a classifier (dropout 0): cross-entropy (mean over the
// labels that are not -100), backward, clip_grad_norm_, the schedule's lr
// factor, AdamW over decay_groups. It holds param.<name> (the start),
// input.ids, input.valid, input.labels, and per step k: step<k>.loss,
// step<k>.grad_norm (before clipping), step<k>.lr, step<k>.grad.<name> (before
// clipping), and after.<name>, the parameters after the last step; its
// metadata adds "train" (the optimiser's settings, JSON).
// cases.txt lists the case names, one per line, so that a missing file fails.
//
// With --device cuda every model, input and step runs on the GPU (the values
// are copied back to be written); without a GPU the program says why and
// exits 77 (CTest: Skipped).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hkt/hkt.hpp"

using namespace hkt;
using namespace hkt::nn;

namespace {

Device g_device = Device::cpu();  // where the models run (--device)
Tensor dev(const Tensor& t) { return to_device(t, g_device); }
Tensor host(const Tensor& t) { return to_device(t, Device::cpu()); }

struct Case {
  std::string name;
  std::string kind;   // "hkt", "mha", "classifier"
  HKTConfig att;      // hkt and mha (mha reads the AttentionConfig part)
  ClassifierConfig cls;
  int64_t B = 2, T = 9;
  std::vector<int64_t> lengths;  // empty: no mask
  int64_t window = 2;                  // local
  int64_t features = 8;                // performer
  std::string feature_map = "favor+";  // performer
};

Tensor right_padding(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<int64_t> v;
  for (int64_t n : lengths)
    for (int64_t t = 0; t < T; ++t) v.push_back(t < n);
  return gt(from_vector(v, {static_cast<int64_t>(lengths.size()), T}), 0.0);
}

// Moves every parameter away from its initial value: theta and the gate by
// N(0, 1) (so lambda and beta differ per head), the rest by N(0, 0.1^2).
void perturb(Module& m, Generator& g) {
  NoGradGuard ng;
  for (auto& [name, p] : m.named_parameters()) {
    const bool logits = name == "theta" || name == "gate" || name.ends_with(".theta") || name.ends_with(".gate");
    Tensor t = p;
    copy_(t, p + normal(p.shape(), 0.0, logits ? 1.0 : 0.1, {p.dtype()}, &g));
  }
}

std::string attention_json(const HKTConfig& c, const std::string& kind) {
  nlohmann::json j = {{"dim", c.dim},   {"heads", c.heads},   {"causal", c.causal},
                      {"bias", c.bias}, {"fused", c.fused},   {"dtype", c.dtype == DType::Float64 ? "float64" : "float32"}};
  if (kind == "hkt") {
    j["levels"] = c.levels;
    j["share_qk"] = c.share_qk;
    j["pointwise"] = c.pointwise;
    j["learn_lambda"] = c.learn_lambda;
    j["hybrid"] = c.hybrid;
    j["conv_kernel"] = c.conv_kernel;
  }
  return j.dump();
}

void write_case(const Case& c, const std::string& dir, uint64_t seed) {
  Generator g(seed);
  std::shared_ptr<Module> model;
  std::string config;
  DType dt;
  if (c.kind == "classifier") {
    auto m = std::make_shared<SequenceClassifier>(c.cls, &g);
    m->eval();  // no dropout
    model = m;
    config = c.cls.to_json();
    dt = c.cls.dtype;
  } else {
    HKTConfig a = c.att;
    a.gen = &g;
    const AttentionConfig& base = a;
    nlohmann::json extra = nlohmann::json::object();
    if (c.kind == "hkt") {
      model = std::make_shared<HKTAttention>(a);
    } else if (c.kind == "local") {
      LocalConfig l;
      static_cast<AttentionConfig&>(l) = base;
      l.window = c.window;
      model = std::make_shared<LocalAttention>(l);
      extra["window"] = c.window;
    } else if (c.kind == "performer") {
      PerformerConfig pc;
      static_cast<AttentionConfig&>(pc) = base;
      pc.features = c.features;
      pc.feature_map = c.feature_map;
      pc.seed = seed;
      model = std::make_shared<PerformerAttention>(pc);
      extra["features"] = c.features;
      extra["feature_map"] = c.feature_map;
    } else {
      model = std::make_shared<MultiHeadAttention>(base);
    }
    nlohmann::json j = nlohmann::json::parse(attention_json(a, c.kind));
    j.update(extra);
    config = j.dump();
    dt = a.dtype;
  }
  perturb(*model, g);
  model->to(g_device);

  std::vector<std::pair<std::string, Tensor>> out;
  Tensor x;
  if (c.kind == "classifier" && c.cls.vocab > 0) {
    std::vector<int64_t> ids;
    for (double u : rand({c.B * c.T}, {DType::Float64}, &g).to_vector<double>())
      ids.push_back(static_cast<int64_t>(u * static_cast<double>(c.cls.vocab)) % c.cls.vocab);
    x = from_vector(ids, {c.B, c.T});
    out.emplace_back("input.ids", x);
    x = dev(x);
  } else {
    const int64_t F = c.kind == "classifier" ? c.cls.input_features : c.att.dim;
    x = randn({c.B, c.T, F}, {dt}, &g);
    out.emplace_back("input.x", x);
    x = dev(x).detach();
    x.set_requires_grad(dt == DType::Float64);
  }
  Tensor valid = c.lengths.empty() ? Tensor() : right_padding(c.lengths, c.T);
  if (valid.defined()) {
    out.emplace_back("input.valid", valid);
    valid = dev(valid);
  }

  Tensor y;
  if (c.kind == "performer") model->eval();  // no redraw counting (the features are exported below)
  if (auto* h = dynamic_cast<HKTAttention*>(model.get())) y = h->forward(x, valid);
  else if (auto* m = dynamic_cast<MultiHeadAttention*>(model.get())) y = m->forward(x, valid);
  else if (auto* l = dynamic_cast<LocalAttention*>(model.get())) y = l->forward(x, valid);
  else if (auto* pf = dynamic_cast<PerformerAttention*>(model.get())) y = pf->forward(x, valid);
  else y = static_cast<SequenceClassifier*>(model.get())->forward(x, valid);
  out.emplace_back("output", host(y.detach()));
  if (auto* h = dynamic_cast<HKTAttention*>(model.get())) {
    const HKTScores s = h->inspect(x, valid);
    for (size_t l = 0; l < s.levels.size(); ++l) out.emplace_back("inspect.level." + std::to_string(l), host(s.levels[l]));
    out.emplace_back("inspect.combined", host(s.combined));
    out.emplace_back("inspect.lambda", host(s.lambda));
    out.emplace_back("inspect.beta", host(s.beta));
  }

  if (dt == DType::Float64) {
    const Tensor r = randn(y.shape(), {dt}, &g);
    sum(y * dev(r)).backward();
    out.emplace_back("input.r", r);
    if (x.requires_grad()) out.emplace_back("grad.input.x", host(x.grad()));
    for (auto& [name, p] : model->named_parameters()) {
      HKT_CHECK(p.grad().defined(), "reference export: no gradient reached ", name, " in case ", c.name);
      out.emplace_back("grad." + name, host(p.grad()));
    }
  }
  for (auto& [name, p] : model->named_parameters()) out.emplace_back("param." + name, host(p.detach()));
  // Buffers the reference needs (Performer's random features; not the draw counter).
  for (auto& [name, b] : model->named_buffers())
    if (name == "features" || name.ends_with(".features")) out.emplace_back("buffer." + name, host(b));
  save_safetensors(dir + "/" + c.name + ".safetensors", out, {{"kind", c.kind}, {"config", config}, {"device", g_device.str()}});
}

constexpr int kTrainSteps = 4;

void write_train_case(const std::string& dir, uint64_t seed) {
  Generator g(seed);
  ClassifierConfig c;
  c.attention = "hkt";
  c.vocab = 9;
  c.dim = 16;
  c.heads = 2;
  c.layers = 1;
  c.attention.edit<HKTOptions>().levels = 3;
  c.classes = 4;
  c.max_len = 16;
  c.dropout = 0.0;
  c.dtype = DType::Float64;
  SequenceClassifier model(c, &g);
  perturb(model, g);
  const int64_t B = 4, T = 14;
  std::vector<int64_t> ids;
  for (double u : rand({B * T}, {DType::Float64}, &g).to_vector<double>()) ids.push_back(static_cast<int64_t>(u * 9) % 9);
  const Tensor x = from_vector(ids, {B, T});
  const Tensor valid = right_padding({14, 9, 5, 12}, T);
  const Tensor labels = from_vector(std::vector<int64_t>{2, 0, -100, 3}, {B});
  const Tensor xd = dev(x), vd = dev(valid), ld = dev(labels);
  const double lr = 0.05, wd = 0.1, clip = 0.5, beta1 = 0.9, beta2 = 0.99, eps = 1e-8;
  const LRSchedule sched = LRSchedule::warmup_cosine(2, kTrainSteps, 0.1);

  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, p] : model.named_parameters()) out.emplace_back("param." + name, clone(p.detach()));
  out.emplace_back("input.ids", x);
  out.emplace_back("input.valid", valid);
  out.emplace_back("input.labels", labels);
  model.to(g_device);  // before the optimiser is made
  AdamW opt(decay_groups(model, lr, wd), beta1, beta2, eps);
  bool clipped = false;
  for (int k = 0; k < kTrainSteps; ++k) {
    const std::string s = "step" + std::to_string(k) + ".";
    const Tensor loss = cross_entropy(model.forward(xd, vd), ld);
    opt.zero_grad();
    loss.backward();
    for (auto& [name, p] : model.named_parameters()) out.emplace_back(s + "grad." + name, host(clone(p.grad())));
    const double gn = clip_grad_norm_(model.parameters(), clip);
    clipped = clipped || gn > clip;
    opt.set_lr_factor(sched.factor(opt.steps()));
    out.emplace_back(s + "loss", full({}, loss.item_double(), {DType::Float64}));
    out.emplace_back(s + "grad_norm", full({}, gn, {DType::Float64}));
    out.emplace_back(s + "lr", full({}, opt.lr(0), {DType::Float64}));
    opt.step();
  }
  HKT_CHECK(clipped, "reference export: the train case never clipped its gradients (raise the norm or lower clip)");
  for (auto& [name, p] : model.named_parameters()) out.emplace_back("after." + name, host(p.detach()));
  const nlohmann::json train = {{"steps", kTrainSteps}, {"lr", lr},       {"weight_decay", wd},
                                {"clip", clip},          {"beta1", beta1}, {"beta2", beta2},
                                {"eps", eps},            {"schedule", sched.str()},
                                {"warmup", sched.warmup_steps}, {"total", sched.total_steps},
                                {"min_factor", sched.min_factor}};
  save_safetensors(dir + "/train.safetensors", out,
                   {{"kind", "train"}, {"config", c.to_json()}, {"train", train.dump()}});
}

std::vector<Case> cases() {
  std::vector<Case> v;
  auto hkt = [&](std::string name, int64_t L, bool causal, int64_t T, std::vector<int64_t> lengths) -> Case& {
    Case c;
    c.name = std::move(name);
    c.kind = "hkt";
    c.att.dim = 12;
    c.att.heads = 3;
    c.att.levels = L;
    c.att.causal = causal;
    c.att.dtype = DType::Float64;
    c.B = lengths.empty() ? 2 : static_cast<int64_t>(lengths.size());
    c.T = T;
    c.lengths = std::move(lengths);
    v.push_back(c);
    return v.back();
  };
  // The default layer, fused, both masks, lengths that are not powers of two.
  hkt("hkt_bidir_L3_T13_mask", 3, false, 13, {13, 7, 1});
  hkt("hkt_causal_L4_T21", 4, true, 21, {});
  hkt("hkt_causal_L3_T19_mask", 3, true, 19, {19, 11, 4});
  hkt("hkt_bidir_L2_T1", 2, false, 1, {});
  // The composite path and the ablation switches.
  {
    Case& c = hkt("hkt_causal_L2_T10_composite_shared_nopw_nohybrid", 2, true, 10, {10, 5});
    c.att.fused = false;
    c.att.share_qk = true;
    c.att.pointwise = false;
    c.att.hybrid = false;
  }
  {
    Case& c = hkt("hkt_bidir_L1_T9_bias_fixed_lambda_k5", 1, false, 9, {9, 3});
    c.att.bias = true;
    c.att.learn_lambda = false;
    c.att.conv_kernel = 5;
  }
  {
    Case& c = hkt("hkt_bidir_L3_T17_composite", 3, false, 17, {17, 9});
    c.att.fused = false;
  }
  // float32 fused kernel (checked to a float32 tolerance; no gradients).
  {
    Case& c = hkt("hkt_causal_L3_T33_float32", 3, true, 33, {33, 20});
    c.att.dtype = DType::Float32;
    c.att.dim = 16;
    c.att.heads = 2;
  }
  // Several key and query tiles of the fused kernels (CPU tiles are 64 wide).
  {
    Case& c = hkt("hkt_causal_L3_T150_mask", 3, true, 150, {150, 97});
    c.att.dim = 16;
    c.att.heads = 2;
  }
  {
    Case& c = hkt("hkt_bidir_L4_T203_mask_float32", 4, false, 203, {203, 64});
    c.att.dtype = DType::Float32;
  }
  {
    Case& c = hkt("mha_causal_T130_mask", 1, true, 130, {130, 71});
    c.kind = "mha";
  }
  {
    Case& c = hkt("mha_bidir_T11_mask_bias", 1, false, 11, {11, 6, 2});
    c.kind = "mha";
    c.att.bias = true;
  }
  {
    Case& c = hkt("mha_causal_T17", 1, true, 17, {});
    c.kind = "mha";
  }
  auto cls = [&](std::string name, std::string attention, int64_t T, std::vector<int64_t> lengths) -> Case& {
    Case c;
    c.name = std::move(name);
    c.kind = "classifier";
    c.cls.attention = std::move(attention);
    c.cls.dim = 16;
    c.cls.heads = 2;
    c.cls.layers = 2;
    c.cls.classes = 3;
    c.cls.max_len = 24;
    c.cls.dropout = 0.1;  // eval mode: no dropout
    c.cls.dtype = DType::Float64;
    c.B = static_cast<int64_t>(lengths.size());
    c.T = T;
    c.lengths = std::move(lengths);
    v.push_back(c);
    return v.back();
  };
  {
    Case& c = cls("classifier_hkt_tokens_T19_mask", "hkt", 19, {19, 12, 5});
    c.cls.vocab = 11;
  }
  // Local (sliding window) and Performer (FAVOR+ with its features exported, and elu + 1).
  for (bool causal : {false, true}) {
    const std::string cs = causal ? "causal" : "bidir";
    {
      Case& c = hkt("local_" + cs + "_T13_w3_mask", 1, causal, 13, {13, 7, 2});
      c.kind = "local";
      c.window = 3;
    }
    {
      Case& c = hkt("local_" + cs + "_T6_w0", 1, causal, 6, {});
      c.kind = "local";
      c.window = 0;
    }
    {
      Case& c = hkt("performer_favor_" + cs + "_T70_mask", 1, causal, 70, {70, 41});
      c.kind = "performer";
      c.features = 12;
    }
    {
      Case& c = hkt("performer_elu1_" + cs + "_T11_mask", 1, causal, 11, {11, 4});
      c.kind = "performer";
      c.feature_map = "elu+1";
    }
  }
  {
    Case& c = cls("classifier_local_tokens_T19_mask", "local", 19, {19, 12, 5});
    c.cls.vocab = 11;
    c.cls.attention.edit<LocalOptions>().window = 4;
  }
  {
    Case& c = cls("classifier_performer_tokens_causal_T19_mask", "performer", 19, {19, 12, 5});
    c.cls.vocab = 11;
    c.cls.attention.causal = true;
    c.cls.attention.edit<PerformerOptions>().features = 10;
  }
  {
    Case& c = cls("classifier_mha_features_causal_T12", "mha", 12, {12, 8});
    c.cls.input_features = 3;
    c.cls.attention.causal = true;
    c.cls.attention.bias = true;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const bool cuda = argc == 4 && std::string(argv[2]) == "--device" && std::string(argv[3]) == "cuda";
  if (argc != 2 && !cuda) {
    std::fprintf(stderr, "usage: %s OUT_DIR [--device cuda]\n", argv[0]);
    return 2;
  }
  if (cuda && !cuda_is_available()) {
    std::printf("SKIPPED: --device cuda: %s\n", cuda_unavailable_reason().c_str());
    return 77;
  }
  if (cuda) g_device = Device::cuda();
  try {
    const std::string dir = argv[1];
    std::string list;
    uint64_t seed = 100;
    size_t skipped = 0;
    for (const Case& c : cases()) {
      // Local attention has CPU kernels only: its cases are not written for --device cuda.
      if (cuda && (c.kind == "local" || (c.kind == "classifier" && c.cls.attention.kind() == "local"))) {
        ++seed;
        ++skipped;
        continue;
      }
      write_case(c, dir, seed++);
      list += c.name + "\n";
    }
    write_train_case(dir, seed);
    list += "train\n";
    std::ofstream(dir + "/cases.txt") << list;
    std::printf("wrote %zu cases to %s (computed on %s%s)\n", cases().size() + 1 - skipped, dir.c_str(),
                cuda ? "cuda" : "cpu", skipped ? "; the local attention cases are CPU-only" : "");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hkt-reference-export: %s\n", e.what());
    return 1;
  }
}
