// hkt against PyTorch's own numbers, in every build without PyTorch: the files in
// tests/reference/torch/ were written by `tests/reference/torch_hkt.py --write-golden` (PyTorch
// 1.13.1, float64; the writer and its version are in each file's metadata). They hold
// the parameters and inputs, and what PyTorch computed from them: a causal HKT layer's,
// a bidirectional one's (L = 4, shared Wq/Wk) and a bidirectional MHA layer's output and every gradient of sum(output * R)
// (torch.autograd), and three training steps of an HKT classifier (F.cross_entropy
// with an ignored label, backward, clip_grad_norm_, a warm-up + cosine lr, and
// torch.optim.AdamW with weight decay on the matrices only). hkt loads the same values
// and must reproduce every number.
#include <nlohmann/json.hpp>

#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::nn;

namespace {

const std::string kDir = HKT_TORCH_GOLDEN_DIR;

// max |a - b| over max(max |b|, floor)
double rel_diff(const Tensor& a, const Tensor& b, double floor = 1e-300) {
  REQUIRE(a.shape() == b.shape());
  const auto x = to_dtype(a, DType::Float64).to_vector<double>(), y = to_dtype(b, DType::Float64).to_vector<double>();
  double d = 0, m = floor;
  for (size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, std::abs(x[i] - y[i]));
    m = std::max(m, std::abs(y[i]));
  }
  return d / m;
}

const Tensor& get(const SafetensorsFile& f, const std::string& name) {
  const Tensor* t = f.find(name);
  INFO("tensor ", name);
  REQUIRE(t != nullptr);
  return *t;
}

// The file's "param.<name>" tensors as a state dict.
NamedTensors params_of(const SafetensorsFile& f) {
  NamedTensors s;
  for (const auto& [name, t] : f.tensors)
    if (name.rfind("param.", 0) == 0) s.emplace_back(name.substr(6), t);
  return s;
}

// The largest |value| over the tensors whose names start with `prefix`.
double largest(const SafetensorsFile& f, const std::string& prefix) {
  double m = 0;
  for (const auto& [name, t] : f.tensors)
    if (name.rfind(prefix, 0) == 0)
      for (double v : t.to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

void check_layer(const std::string& file) {
  const SafetensorsFile f = load_safetensors(kDir + "/" + file);
  INFO(file, " (", f.metadata.at("writer"), ")");
  const auto c = nlohmann::json::parse(f.metadata.at("config"));
  HKTConfig cfg;
  cfg.dim = c.at("dim");
  cfg.heads = c.at("heads");
  cfg.causal = c.at("causal");
  cfg.bias = c.at("bias");
  cfg.dtype = DType::Float64;
  std::unique_ptr<Module> m;
  const bool is_hkt = f.metadata.at("kind") == "hkt";
  if (is_hkt) {
    cfg.levels = c.at("levels");
    cfg.share_qk = c.at("share_qk");
    cfg.pointwise = c.at("pointwise");
    cfg.learn_lambda = c.at("learn_lambda");
    cfg.hybrid = c.at("hybrid");
    cfg.conv_kernel = c.at("conv_kernel");
    m = std::make_unique<HKTAttention>(cfg);
  } else {
    m = std::make_unique<MultiHeadAttention>(cfg);
  }
  m->load_state_dict(params_of(f));  // strict: the same names and shapes as hkt's
  Tensor x = clone(get(f, "input.x"));
  x.set_requires_grad(true);
  const Tensor& valid = get(f, "input.valid");
  const Tensor y = is_hkt ? static_cast<HKTAttention&>(*m).forward(x, valid)
                          : static_cast<MultiHeadAttention&>(*m).forward(x, valid);
  CHECK(rel_diff(y, get(f, "output")) < 1e-12);
  sum(y * get(f, "input.r")).backward();
  const double g = largest(f, "grad.");
  CHECK(rel_diff(x.grad(), get(f, "grad.input.x"), g) < 1e-11);
  int64_t n = 1;
  for (const auto& [name, p] : m->named_parameters()) {
    INFO("gradient of ", name);
    CHECK(rel_diff(p.grad(), get(f, "grad." + name), g) < 1e-11);
    ++n;
  }
  MESSAGE(file, ": output and ", n, " gradients agree with PyTorch");
}

}  // namespace

TEST_CASE("a causal HKT layer (L = 3, T = 37, padding) reproduces PyTorch's output and gradients") {
  check_layer("hkt_layer_causal_L3_T37.safetensors");
}

TEST_CASE("an MHA layer (biases, T = 29, padding) reproduces PyTorch's output and gradients") {
  check_layer("mha_layer_bidir_bias_T29.safetensors");
}

TEST_CASE("a bidirectional HKT layer (L = 4, shared Wq/Wk, T = 45, padding) reproduces PyTorch's output and gradients") {
  check_layer("hkt_layer_bidir_L4_T45_shared.safetensors");
}

TEST_CASE("three training steps of an HKT classifier reproduce torch.optim.AdamW's") {
  const SafetensorsFile f = load_safetensors(kDir + "/classifier_train.safetensors");
  INFO(f.metadata.at("writer"));
  SequenceClassifier model(ClassifierConfig::from_json(f.metadata.at("config")));
  model.load_state_dict(params_of(f));
  const auto tr = nlohmann::json::parse(f.metadata.at("train"));
  AdamW opt(decay_groups(model, tr.at("lr"), tr.at("weight_decay")), tr.at("beta1"), tr.at("beta2"), tr.at("eps"));
  const LRSchedule sched = LRSchedule::warmup_cosine(tr.at("warmup"), tr.at("total"), tr.at("min_factor"));
  const Tensor &ids = get(f, "input.ids"), &valid = get(f, "input.valid"), &labels = get(f, "input.labels");
  const int steps = tr.at("steps");
  for (int k = 0; k < steps; ++k) {
    const std::string s = "step" + std::to_string(k) + ".";
    INFO("step ", k);
    const Tensor logits = model.forward(ids, valid);
    CHECK(rel_diff(logits, get(f, s + "logits")) < 1e-12);
    const Tensor loss = cross_entropy(logits, labels);
    CHECK(loss.shape() == get(f, s + "loss").shape());  // 0-d, as PyTorch's
    CHECK(loss.item<double>() == doctest::Approx(get(f, s + "loss").item<double>()).epsilon(1e-13));
    opt.zero_grad();
    loss.backward();
    const double g = largest(f, s + "grad.");
    for (const auto& [name, p] : model.named_parameters()) {
      INFO("gradient of ", name);
      CHECK(rel_diff(p.grad(), get(f, s + "grad." + name), g) < 1e-10);
    }
    const double norm = clip_grad_norm_(model.parameters(), tr.at("clip"));
    CHECK(norm == doctest::Approx(get(f, s + "grad_norm").item<double>()).epsilon(1e-12));
    opt.set_lr_factor(sched.factor(opt.steps()));
    opt.step();
  }
  for (const auto& [name, p] : model.named_parameters()) {
    INFO("parameter ", name, " after ", steps, " steps");
    CHECK(rel_diff(p, get(f, "after." + name)) < 1e-12);
  }
}
