// The sequence classifier: names, parameter counts, config JSON, shapes,
// padding invariance, gradients, a short training run; the score cost model.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "helpers/check.hpp"
#include "hkt/models/attention.hpp"
#include "hkt/models/classifier.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {

Tensor param(const Module& m, const std::string& name) {
  for (auto& [n, t] : m.named_parameters())
    if (n == name) return t;
  FAIL("no parameter named " << name);
  return Tensor();
}

std::vector<std::string> param_names(const Module& m) {
  std::vector<std::string> names;
  for (auto& [n, t] : m.named_parameters()) names.push_back(n);
  return names;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A Bool [B, T] mask, true at t < len[b] (right padding).
Tensor lengths_mask(const std::vector<int64_t>& len, int64_t T) {
  std::vector<int64_t> v;
  for (int64_t l : len)
    for (int64_t t = 0; t < T; ++t) v.push_back(t < l);
  return ne(from_vector(v, {static_cast<int64_t>(len.size()), T}), 0.0);
}

Tensor random_ids(int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  Generator g(seed);
  const auto u = rand({B * T}, {DType::Float64}, &g).to_vector<double>();
  std::vector<int64_t> ids;
  for (double x : u) ids.push_back(static_cast<int64_t>(x * static_cast<double>(vocab)) % vocab);
  return from_vector(ids, {B, T});
}

ClassifierConfig tiny(const std::string& kind, int64_t vocab = 20, int64_t classes = 10, int64_t max_len = 512) {
  ClassifierConfig c = ClassifierConfig::preset(kind + "-tiny");
  c.vocab = vocab;
  c.classes = classes;
  c.max_len = max_len;
  return c;
}

// --- parameter counts, written out from the layer shapes -------------------
// Linear(in, out, bias): in*out + out; LayerNorm(D): 2D; Embedding(V, D): V*D;
// CausalDepthwiseConv1d(C, k, bias): C*k (+ C).
int64_t hkt_attention_params(int64_t D, int64_t H, int64_t L) {
  return 2 * L * D * D                    // wq.<l>, wk.<l>: Linear(D, D, no bias) per level
         + 2 * D * D                      // wv, wo: Linear(D, D, no bias)
         + (L - 1) * ((3 * D + D)         // down.<l-1>.conv: depthwise k=3 stride 2, with bias
                      + (D * D + D)       // down.<l-1>.pw: Linear(D, D) with bias
                      + 2 * D)            // down.<l-1>.ln
         + H * L                          // theta [H, L]
         + H                              // gate [H]
         + 3 * D;                         // conv: hybrid branch, depthwise k=3, no bias
}
int64_t mha_attention_params(int64_t D) { return 4 * D * D; }  // wq, wk, wv, wo: Linear(D, D, no bias)
int64_t block_params(int64_t D, int64_t ffn_mult, int64_t attn) {
  const int64_t F = ffn_mult * D;
  return 2 * D             // ln1
         + attn            // attn
         + 2 * D           // ln2
         + (D * F + F)     // ffn.fc1
         + (F * D + D);    // ffn.fc2
}
int64_t classifier_params(int64_t V, int64_t max_len, int64_t D, int64_t N, int64_t C, int64_t block) {
  return V * D             // embed.weight
         + max_len * D     // pos
         + N * block       // blocks.<i>
         + 2 * D           // ln_f
         + (D * C + C);    // head
}

}  // namespace

TEST_CASE("classifier: parameter names and order") {
  SequenceClassifier m(tiny("hkt"));
  const auto names = param_names(m);
  for (const char* n : {"embed.weight", "pos", "blocks.0.ln1.weight", "blocks.0.attn.wq.1.weight",
                        "blocks.0.attn.wk.2.weight", "blocks.0.attn.down.1.pw.weight", "blocks.0.attn.theta",
                        "blocks.0.attn.gate", "blocks.0.attn.conv.weight", "blocks.0.ffn.fc1.weight",
                        "blocks.0.ffn.fc2.bias", "ln_f.weight", "head.weight", "head.bias"})
    CHECK_MESSAGE(has(names, n), n);
  // A module's own parameters come before its children's.
  CHECK(names.front() == "pos");
  CHECK(names[1] == "embed.weight");
  CHECK(names.back() == "head.bias");
  CHECK(param(m, "pos").shape() == Shape{512, 16});

  SequenceClassifier b(tiny("mha"));
  const auto mnames = param_names(b);
  for (const char* n : {"blocks.0.attn.wq.weight", "blocks.0.attn.wo.weight", "blocks.0.ln2.bias"})
    CHECK_MESSAGE(has(mnames, n), n);
  CHECK(!has(mnames, "blocks.0.attn.theta"));

  ClassifierConfig f = tiny("hkt");
  f.vocab = 0;
  f.input_features = 3;
  SequenceClassifier img(f);
  const auto fnames = param_names(img);
  CHECK(fnames[1] == "input_map.weight");
  CHECK(fnames[2] == "input_map.bias");
  CHECK(!has(fnames, "embed.weight"));
  CHECK(img.embed == nullptr);
}

TEST_CASE("classifier: preset parameter counts (vocab 20, classes 10, max_len 512)") {
  const int64_t V = 20, C = 10, M = 512;
  struct Row {
    const char* preset;
    int64_t expected;
  };
  // small: D = 128, H = 4, N = 2, ffn 4D, L = 3; tiny: D = 16, H = 2, N = 1, L = 3.
  const int64_t hkt_small = classifier_params(V, M, 128, 2, C, block_params(128, 4, hkt_attention_params(128, 4, 3)));
  const int64_t mha_small = classifier_params(V, M, 128, 2, C, block_params(128, 4, mha_attention_params(128)));
  const int64_t hkt_tiny = classifier_params(V, M, 16, 1, C, block_params(16, 4, hkt_attention_params(16, 2, 3)));
  const int64_t mha_tiny = classifier_params(V, M, 16, 1, C, block_params(16, 4, mha_attention_params(16)));
  // The same figures as numbers (docs/hkt.md quotes them).
  CHECK(hkt_attention_params(128, 4, 3) == 166032);
  CHECK(hkt_small == 666154);
  CHECK(mha_small == 465162);
  CHECK(hkt_tiny == 13746);
  CHECK(mha_tiny == 11930);
  // mha-matched: mha-small with a 7D FFN; 3,616 parameters (1,808 a block) below hkt-small on every task.
  const int64_t mha_matched = classifier_params(V, M, 128, 2, C, block_params(128, 7, mha_attention_params(128)));
  CHECK(mha_matched == 662538);
  CHECK(hkt_small - mha_matched == 3616);
  for (const Row& r : {Row{"hkt-small", hkt_small}, Row{"mha-small", mha_small}, Row{"mha-matched", mha_matched},
                       Row{"hkt-tiny", hkt_tiny}, Row{"mha-tiny", mha_tiny}}) {
    ClassifierConfig c = ClassifierConfig::preset(r.preset);
    c.vocab = V;
    c.classes = C;
    c.max_len = M;
    SequenceClassifier m(c);
    INFO(r.preset);
    CHECK(m.num_parameters() == r.expected);
    CHECK(m.num_parameters(true) == r.expected);
  }
}

TEST_CASE("classifier: mha-matched is within 2% of hkt-small's parameters on every task's shape") {
  struct Shape {
    int64_t vocab, features, max_len, classes;
  };
  // ListOps (T = 512, long or not), sequential CIFAR-10 (tokens and RGB), Fashion-MNIST, IMDB bytes.
  for (const Shape& s : {Shape{16, 0, 512, 10}, Shape{16, 0, 2000, 10}, Shape{256, 0, 1024, 10}, Shape{0, 3, 1024, 10},
                         Shape{256, 0, 784, 10}, Shape{257, 0, 1024, 2}}) {
    int64_t n[2];
    for (int k = 0; k < 2; ++k) {
      ClassifierConfig c = ClassifierConfig::preset(k == 0 ? "hkt-small" : "mha-matched");
      c.vocab = s.vocab;
      c.input_features = s.features;
      c.max_len = s.max_len;
      c.classes = s.classes;
      n[k] = SequenceClassifier(c).num_parameters();
    }
    CAPTURE(s.vocab);
    CAPTURE(s.max_len);
    CHECK(std::abs(static_cast<double>(n[1] - n[0])) / static_cast<double>(n[0]) < 0.02);
    CHECK(n[0] - n[1] == 3616);
  }
}

TEST_CASE("classifier: same seed, same model bit for bit; initial values") {
  const ClassifierConfig c = tiny("hkt");
  Generator g1(42), g2(42), g3(43);
  SequenceClassifier a(c, &g1), b(c, &g2), d(c, &g3);
  const auto pa = a.named_parameters(), pb = b.named_parameters(), pd = d.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) CHECK(vals(pa[i].second) == vals(pb[i].second));
  CHECK(vals(param(a, "blocks.0.attn.wq.0.weight")) != vals(param(d, "blocks.0.attn.wq.0.weight")));
  // The global generator when none is given.
  manual_seed(9);
  SequenceClassifier e(c);
  manual_seed(9);
  SequenceClassifier f(c);
  for (size_t i = 0; i < pa.size(); ++i)
    CHECK(vals(e.named_parameters()[i].second) == vals(f.named_parameters()[i].second));
  // embed.weight and pos ~ N(0, 0.02).
  for (const char* n : {"embed.weight", "pos"}) {
    const double sd = std::sqrt(var(to_dtype(param(a, n), DType::Float64)).item<double>());
    CHECK_MESSAGE(sd == doctest::Approx(0.02).epsilon(0.1), n);
  }
  CHECK(vals(param(a, "blocks.0.attn.theta")) == std::vector<double>(6, 0.0));
}

TEST_CASE("classifier config: JSON round trip and errors") {
  ClassifierConfig c;
  c.vocab = 0;
  c.input_features = 3;
  c.max_len = 1024;
  c.dim = 96;
  c.heads = 6;
  c.layers = 5;
  c.ffn_mult = 2;
  c.dropout = 0.123456789012345;
  c.classes = 7;
  c.attention.causal = true;
  c.attention.bias = true;
  HKTOptions& h = c.attention.edit<HKTOptions>();
  h.levels = 4;
  h.share_qk = true;
  h.pointwise = false;
  h.learn_lambda = false;
  h.hybrid = false;
  c.dtype = DType::Float64;
  const std::string j = c.to_json();
  CHECK(j.find("\"dtype\": \"float64\"") != std::string::npos);
  CHECK(j.find("\"attention\": \"hkt\"") != std::string::npos);
  const ClassifierConfig r = ClassifierConfig::from_json(j);
  CHECK(r == c);
  CHECK(r.attention.get<HKTOptions>().levels == 4);
  // Another kind keeps causal and bias, and its options start at their defaults.
  ClassifierConfig m = c;
  m.attention = "mha";
  CHECK(m.attention.kind() == "mha");
  CHECK(m.attention.causal);
  CHECK(m.attention.bias);
  CHECK(c.attention.get<HKTOptions>().levels == 4);  // copies do not share edits
  CHECK(ClassifierConfig::from_json(m.to_json()) == m);
  // The flat layout of every archived config: each kind's keys, this kind's values, the
  // others' defaults; another kind's key away from its default is refused, naming it.
  CHECK(m.to_json().find("\"levels\": 3") != std::string::npos);
  CHECK(m.to_json().find("\"window\": 64") != std::string::npos);
  check_error([] { ClassifierConfig::from_json(R"({"attention": "mha", "levels": 2})"); },
              "key 'levels' is an option of attention \"hkt\", and this model's attention is \"mha\"");
  check_error([] { ClassifierConfig::from_json(R"({"window": 8})"); },
              "key 'window' is an option of attention \"local\"");
  check_error([] { ClassifierConfig::from_json(R"({"attention": "mha", "levels": "3"})"); },
              "key 'levels' must be an integer");
  CHECK(ClassifierConfig::from_json(R"({"window": 8, "attention": "local"})").attention.get<LocalOptions>().window == 8);
  check_error([&] { (void)m.attention.get<HKTOptions>(); }, "attention \"mha\" has no options of \"hkt\"");
  check_error([&] { m.attention.edit<LocalOptions>(); }, "attention \"mha\" has no options of \"local\"");
  CHECK(r.dropout == c.dropout);  // bit-exact
  CHECK(ClassifierConfig::from_json(ClassifierConfig().to_json()) == ClassifierConfig());
  for (const char* p : {"hkt-small", "mha-small", "hkt-tiny", "mha-tiny"})
    CHECK(ClassifierConfig::from_json(ClassifierConfig::preset(p).to_json()) == ClassifierConfig::preset(p));
  // Missing keys keep their defaults.
  const ClassifierConfig partial = ClassifierConfig::from_json(R"({"dim": 32, "vocab": 5})");
  CHECK(partial.dim == 32);
  CHECK(partial.vocab == 5);
  CHECK(partial.heads == ClassifierConfig().heads);

  check_error([] { ClassifierConfig::from_json(R"({"dim": 32, "depth": 3})"); }, "unknown key 'depth'");
  check_error([] { ClassifierConfig::from_json(R"({"dim": "32"})"); }, "key 'dim' must be an integer");
  check_error([] { ClassifierConfig::from_json(R"({"dim": 32.5})"); }, "key 'dim' must be an integer");
  check_error([] { ClassifierConfig::from_json(R"({"dropout": "0.1"})"); }, "key 'dropout' must be a number");
  check_error([] { ClassifierConfig::from_json(R"({"causal": 1})"); }, "key 'causal' must be true or false");
  check_error([] { ClassifierConfig::from_json(R"({"attention": 3})"); }, "key 'attention' must be a string");
  check_error([] { ClassifierConfig::from_json(R"({"dtype": "int64"})"); }, "key 'dtype' must be \"float32\"");
  check_error([] { ClassifierConfig::from_json(R"({"dim": 32)"); }, "invalid JSON");
  check_error([] { ClassifierConfig::from_json("[1, 2]"); }, "expected a JSON object");
}

TEST_CASE("classifier config: presets and validation errors") {
  const ClassifierConfig s = ClassifierConfig::preset("hkt-small");
  CHECK(s.attention.kind() == "hkt");
  CHECK(s.dim == 128);
  CHECK(s.heads == 4);
  CHECK(s.layers == 2);
  CHECK(s.ffn_mult == 4);
  CHECK(s.dropout == 0.1);
  CHECK(s.attention.get<HKTOptions>().levels == 3);
  ClassifierConfig m = ClassifierConfig::preset("mha-small");
  CHECK(m.attention.kind() == "mha");
  m.attention = "hkt";
  CHECK(m == s);
  const ClassifierConfig t = ClassifierConfig::preset("mha-tiny");
  CHECK(t.attention.kind() == "mha");
  CHECK(t.dim == 16);
  CHECK(t.heads == 2);
  CHECK(t.layers == 1);
  CHECK(t.dropout == 0.0);
  check_error([] { ClassifierConfig::preset("hkt-huge"); }, "unknown preset 'hkt-huge'");

  auto bad = [](auto edit, const std::string& needle) {
    ClassifierConfig c = tiny("hkt");
    edit(c);
    check_error([&] { c.validate(); }, needle);
    check_error([&] { SequenceClassifier model(c); }, needle);
  };
  tiny("hkt").validate();
  bad([](ClassifierConfig& c) { c.vocab = 0; }, "exactly one of vocab");
  bad([](ClassifierConfig& c) { c.input_features = 3; }, "exactly one of vocab");
  bad([](ClassifierConfig& c) { c.dim = 15; }, "dim (15) must be divisible by heads (2)");
  bad([](ClassifierConfig& c) { c.attention.edit<HKTOptions>().levels = 0; }, "levels must be >= 1");
  check_error([] { ClassifierConfig c; c.attention = "linear"; }, "unknown attention kind 'linear'");
  bad([](ClassifierConfig& c) { c.attention.edit<HKTOptions>().conv_only = true, c.attention.edit<HKTOptions>().hybrid = false; },
      "conv_only needs attention \"hkt\" with hybrid = true");
  bad([](ClassifierConfig& c) { c.dropout = 1.0; }, "dropout must be in [0, 1)");
  bad([](ClassifierConfig& c) { c.classes = 1; }, "classes must be >= 2");
  bad([](ClassifierConfig& c) { c.max_len = 0; }, "max_len must be >= 1");
  bad([](ClassifierConfig& c) { c.layers = 0; }, "layers must be >= 1");
  bad([](ClassifierConfig& c) { c.dtype = DType::Int64; }, "dtype must be float32 or float64");
}

TEST_CASE("classifier: forward shapes and input errors") {
  for (const char* kind : {"hkt", "mha"}) {
    INFO(kind);
    SequenceClassifier m(tiny(kind, 20, 5, 16));
    const Tensor ids = random_ids(3, 10, 20, 1);
    CHECK(m.forward(ids).shape() == Shape{3, 5});
    CHECK(m.forward(ids, lengths_mask({10, 4, 1}, 10)).shape() == Shape{3, 5});
    CHECK(m.forward(random_ids(2, 1, 20, 2)).shape() == Shape{2, 5});   // T = 1
    CHECK(m.forward(random_ids(1, 16, 20, 3)).shape() == Shape{1, 5});  // T = max_len
    check_error([&] { m.forward(random_ids(1, 17, 20, 3)); }, "T = 17 exceeds max_len = 16");
    check_error([&] { m.forward(to_dtype(ids, DType::Float32)); }, "token ids must be int64");
    check_error([&] { m.forward(reshape(ids, {30})); }, "token ids must be [B, T]");
    check_error([&] { m.forward(ids, to_dtype(lengths_mask({10, 4, 1}, 10), DType::Float32)); },
                "valid must be bool [3, 10]");
    check_error([&] { m.forward(ids, lengths_mask({10, 4}, 10)); }, "valid must be bool [3, 10]");
  }
  ClassifierConfig f = tiny("hkt", 0, 4, 32);
  f.input_features = 3;
  SequenceClassifier img(f);
  Generator g(3);
  const Tensor x = randn({2, 9, 3}, {}, &g);
  CHECK(img.forward(x).shape() == Shape{2, 4});
  CHECK(img.forward(x, lengths_mask({9, 5}, 9)).shape() == Shape{2, 4});
  // float64 features are converted to the model's dtype.
  CHECK(vals(img.forward(to_dtype(x, DType::Float64))) == vals(img.forward(x)));
  check_error([&] { img.forward(random_ids(2, 9, 3, 1)); }, "features must be float32 or float64");
  check_error([&] { img.forward(randn({2, 9, 4})); }, "features must be [B, T, 3], got [2, 9, 4]");
  check_error([&] { img.forward(randn({2, 33, 3})); }, "exceeds max_len = 32");
}

TEST_CASE("classifier: logits do not depend on the content of padded positions") {
  const int64_t T = 13;
  const std::vector<int64_t> len = {13, 7, 4, 1};
  const Tensor valid = lengths_mask(len, T);
  for (bool causal : {false, true})
    for (const char* kind : {"hkt", "mha"}) {
      INFO(kind << (causal ? " causal" : " bidirectional"));
      ClassifierConfig c = tiny(kind, 11, 3, 16);
      c.attention.causal = causal;
      c.dropout = 0.1;  // eval mode turns it off
      Generator g(5);
      SequenceClassifier m(c, &g);
      m.eval();
      const Tensor ids = random_ids(4, T, 11, 7);
      auto other = ids.to_vector<int64_t>();
      for (size_t b = 0; b < len.size(); ++b)
        for (int64_t t = len[b]; t < T; ++t) other[b * T + t] = (other[b * T + t] + 1 + t) % 11;
      const Tensor ids2 = from_vector(other, {4, T});
      const auto y1 = vals(m.forward(ids, valid)), y2 = vals(m.forward(ids2, valid));
      REQUIRE(vals(ids) != vals(ids2));
      for (size_t i = 0; i < y1.size(); ++i) CHECK(y1[i] == doctest::Approx(y2[i]).epsilon(1e-6));
      // A padded sequence gives the logits of the same sequence alone, unpadded.
      const Tensor alone = slice(slice(ids, 0, 1, 2), 1, 0, 7);
      const auto y3 = vals(m.forward(alone));
      for (size_t k = 0; k < 3; ++k) CHECK(y1[3 + k] == doctest::Approx(y3[k]).epsilon(1e-5));
      // Without valid the padded content matters.
      CHECK(vals(m.forward(ids)) != vals(m.forward(ids2)));
    }
  // A sequence with no valid position pools to zeros: its logits are head.bias.
  SequenceClassifier m(tiny("hkt", 11, 3, 16));
  const auto y = vals(m.forward(random_ids(2, 5, 11, 1), lengths_mask({5, 0}, 5)));
  const auto bias = vals(m.head->bias);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(std::isfinite(y[k]));
    CHECK(y[3 + k] == doctest::Approx(bias[k]).epsilon(1e-6));
  }
}

TEST_CASE("classifier: whole-model gradients in float64") {
  // B = 2, T = 7 (not a multiple of 4: partial blocks at levels 1 and 2), D = 8, H = 2, one block.
  for (const char* kind : {"hkt", "mha"}) {
    INFO(kind);
    ClassifierConfig c = tiny(kind, 6, 3, 7);
    c.dim = 8;
    c.dtype = DType::Float64;
    Generator g(11);
    SequenceClassifier m(c, &g);
    // Move theta and gate away from 0 so lambda and beta are not symmetric.
    if (std::string(kind) == "hkt") {
      NoGradGuard ng;
      Tensor th = param(m, "blocks.0.attn.theta"), ga = param(m, "blocks.0.attn.gate");
      copy_(th, from_vector(std::vector<double>{0.3, -0.2, 0.1, -0.4, 0.5, 0.0}, {2, 3}));
      copy_(ga, from_vector(std::vector<double>{0.7, -0.6}, {2}));
    }
    const Tensor ids = random_ids(2, 7, 6, 3);
    const Tensor valid = lengths_mask({7, 5}, 7);
    const Tensor y = from_vector(std::vector<int64_t>{2, 0}, {2});
    std::vector<Tensor> ps = {param(m, "head.weight"), param(m, "pos"), param(m, "embed.weight"),
                              param(m, "blocks.0.ffn.fc1.bias")};
    if (std::string(kind) == "hkt") {
      ps.push_back(param(m, "blocks.0.attn.wq.1.weight"));
      ps.push_back(param(m, "blocks.0.attn.wk.2.weight"));
      ps.push_back(param(m, "blocks.0.attn.theta"));
      ps.push_back(param(m, "blocks.0.attn.gate"));
      ps.push_back(param(m, "blocks.0.attn.down.0.conv.weight"));
    } else {
      ps.push_back(param(m, "blocks.0.attn.wq.weight"));
      ps.push_back(param(m, "blocks.0.attn.wv.weight"));
    }
    gradcheck([&](const std::vector<Tensor>&) { return m.forward(ids, valid); }, ps);
    gradcheck([&](const std::vector<Tensor>&) { return cross_entropy(m.forward(ids), y); },
              {param(m, "head.bias"), param(m, "blocks.0.ln1.weight")});
    // backward() reaches every parameter.
    m.zero_grad();
    cross_entropy(m.forward(ids, valid), y).backward();
    for (auto& p : m.named_parameters()) CHECK_MESSAGE(p.second.grad().defined(), p.first);
  }
  // Real-valued inputs: gradients reach the input map and the features themselves.
  ClassifierConfig f = tiny("hkt", 0, 3, 7);
  f.input_features = 2;
  f.dim = 8;
  f.dtype = DType::Float64;
  Generator g(12);
  SequenceClassifier img(f, &g);
  const Tensor x = leaf({2, 7, 2});
  const Tensor valid = lengths_mask({6, 7}, 7);
  gradcheck([&](const std::vector<Tensor>& in) { return img.forward(in[0], valid); },
            {x, param(img, "input_map.weight"), param(img, "input_map.bias")});
}

namespace {

// "Which marker comes first": tokens 1..4 are markers, 5..7 filler, 0 pad.
// Each sequence (length 16..24, right-padded to 24) holds 2..4 markers at
// random positions; the label is the kind of the earliest one (4 classes).
// Mean pooling of per-position features cannot tell which marker is first
// (it only sees a histogram of (token, position) pairs through a linear head);
// attention can (a marker looks for markers before it).
struct Batch {
  Tensor ids, valid, y;
};
Batch first_marker_batch(int64_t B, uint64_t seed) {
  const int64_t T = 24;
  Generator g(seed);
  const auto u = rand({B * (T + 16)}, {DType::Float64}, &g).to_vector<double>();
  size_t k = 0;
  auto next = [&] { return u[k++]; };
  std::vector<int64_t> ids(static_cast<size_t>(B * T), 0), val(ids.size(), 0), y(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = T - static_cast<int64_t>(next() * 9);  // 16..24
    for (int64_t t = 0; t < len; ++t) {
      val[b * T + t] = 1;
      ids[b * T + t] = 5 + static_cast<int64_t>(next() * 3);
    }
    const int n = 2 + static_cast<int>(next() * 3);
    for (int i = 0; i < n; ++i) ids[b * T + static_cast<int64_t>(next() * len)] = 1 + static_cast<int64_t>(next() * 4);
    for (int64_t t = 0; t < len; ++t)
      if (ids[b * T + t] <= 4) {
        y[b] = ids[b * T + t] - 1;
        break;
      }
  }
  return {from_vector(ids, {B, T}), ne(from_vector(val, {B, T}), 0.0), from_vector(y, {B})};
}

double eval_loss(SequenceClassifier& m, const Batch& d) {
  NoGradGuard ng;
  m.eval();
  const double l = cross_entropy(m.forward(d.ids, d.valid), d.y).item_double();
  m.train();
  return l;
}

struct RunResult {
  double before, after, seconds;
};
// 300 AdamW steps of batch 32, warm-up + cosine schedule, gradient clipping.
// attention_off: the attention output projections are zeroed and frozen (the
// model is then per-position layers + mean pooling): the control.
RunResult train_first_marker(const std::string& kind, bool attention_off = false) {
  const int64_t steps = 300;
  ClassifierConfig c = tiny(kind, 8, 4, 24);
  Generator g(1);
  SequenceClassifier m(c, &g);
  if (attention_off) {
    NoGradGuard ng;
    Tensor wo = param(m, "blocks.0.attn.wo.weight");
    zero_(wo);
    wo.set_requires_grad(false);
  }
  AdamW opt(decay_groups(m, 3e-3, 0.01));
  const LRSchedule sched = LRSchedule::warmup_cosine(30, steps, 0.1);
  const Batch held_out = first_marker_batch(512, 99999);
  RunResult r{eval_loss(m, held_out), 0, 0};
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    const Batch d = first_marker_batch(32, 100 + static_cast<uint64_t>(s));
    opt.zero_grad();
    Tensor loss = cross_entropy(m.forward(d.ids, d.valid), d.y);
    loss.backward();
    clip_grad_norm_(m.parameters(), 1.0);
    opt.set_lr_factor(sched.factor(opt.steps()));
    opt.step();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.after = eval_loss(m, held_out);
  return r;
}

}  // namespace

TEST_CASE("classifier: a short training run learns a task that needs attention") {
  const double chance = std::log(4.0);
  for (const char* kind : {"hkt", "mha"}) {
    const RunResult r = train_first_marker(kind);
    MESSAGE(std::string(kind) << "-tiny, first marker: held-out loss " << r.before << " -> " << r.after << " (chance " << chance
                 << ") in " << r.seconds << " s");
    CHECK(r.before > 0.9 * chance);
    CHECK(r.after < 0.5 * chance);
  }
  // The control without attention stays well above: the task needs it.
  const RunResult ctl = train_first_marker("mha", /*attention_off=*/true);
  MESSAGE("control without attention: held-out loss " << ctl.before << " -> " << ctl.after);
  CHECK(ctl.after > 0.7 * chance);
}

TEST_CASE("model_flops: every product of the classifier, by part") {
  ClassifierConfig m = ClassifierConfig::preset("mha-small");
  m.vocab = 256;
  m.classes = 10;
  m.max_len = 4096;
  const double D = 128, Ly = 2;  // dim, layers of the small presets
  const int64_t B = 3, T = 100;
  const double n = B * T;
  const ModelFlops a = model_flops(m, B, T);
  CHECK(a.projections == Ly * 4 * 2 * n * D * D);
  CHECK(a.scores == Ly * 2 * B * double(T * T) * D);
  CHECK(a.values == a.scores);
  CHECK(a.ffn == Ly * 2 * 2 * n * D * 4 * D);
  CHECK(a.downsample == 0);
  CHECK(a.hybrid == 0);
  CHECK(a.other == 2 * B * D * 10);
  // HKT L = 3 at T = 100: T_l = 100, 50, 25.
  ClassifierConfig h = m;
  h.attention = "hkt";
  const ModelFlops c = model_flops(h, B, T);
  CHECK(c.projections == Ly * (2 * 2 * n * D * D + 2 * 2 * B * D * D * (100 + 50 + 25)));
  CHECK(c.scores == Ly * 2 * B * D * (100.0 * 100 + 50 * 50 + 25 * 25));
  CHECK(c.values == a.values);
  CHECK(c.downsample == Ly * (2 * B * D * 3 * (50 + 25) + 2 * B * D * D * (50 + 25)));
  CHECK(c.hybrid == Ly * 2 * n * D * 3);
  CHECK(c.ffn == a.ffn);
  CHECK(c.total() > a.total());
  // HKT with one level, no hybrid branch, is MHA's arithmetic.
  h.attention.edit<HKTOptions>().levels = 1;
  h.attention.edit<HKTOptions>().hybrid = false;
  CHECK(model_flops(h, B, T).total() == a.total());
  // conv_only: Wv, Wo and the hybrid branch's convolution; no scores, A V or downsampling.
  ClassifierConfig co = m;
  co.attention = "hkt";
  co.attention.edit<HKTOptions>().conv_only = true;
  const ModelFlops k = model_flops(co, B, T);
  CHECK(k.projections == Ly * 2 * 2 * n * D * D);
  CHECK(k.scores == 0);
  CHECK(k.values == 0);
  CHECK(k.downsample == 0);
  CHECK(k.hybrid == c.hybrid);
  CHECK(k.ffn == a.ffn);
  // Real-valued inputs add their input map.
  ClassifierConfig r = m;
  r.vocab = 0;
  r.input_features = 3;
  CHECK(model_flops(r, B, T).other == 2 * n * 3 * D + 2 * B * D * 10);
  check_error([&] { model_flops(m, 0, 8); }, "B and T must be >= 1");
  ClassifierConfig bad = m;
  bad.dim = 130;
  check_error([&] { model_flops(bad, 1, 8); }, "divisible by heads");
}

TEST_CASE("score_flops: the cost model") {
  for (int64_t L = 1; L <= 4; ++L)
    for (int64_t T : {8, 64, 1024}) {
      const ScoreCost c = score_flops(2, T, 64, 4, L);
      const double expected = (4.0 / 3.0) * (1.0 - std::pow(4.0, -static_cast<double>(L)));
      CHECK(std::abs(c.ratio - expected) < 1e-12);
      CHECK(c.per_level.size() == static_cast<size_t>(L));
      CHECK(c.mha == 2.0 * 2 * 4 * 16 * static_cast<double>(T * T));
    }
  CHECK(score_flops(1, 64, 8, 1, 1).ratio == 1.0);
  CHECK(score_flops(1, 64, 8, 1, 2).ratio == 1.25);
  CHECK(score_flops(1, 64, 8, 1, 3).ratio == 1.3125);
  CHECK(score_flops(1, 64, 8, 1, 4).ratio == 1.328125);
  // A hand case: B = 3, T = 16, D = 32, H = 4 (dh = 8), L = 3: T_l = 16, 8, 4.
  const ScoreCost h = score_flops(3, 16, 32, 4, 3);
  CHECK(h.per_level == std::vector<double>{2.0 * 3 * 4 * 256 * 8, 2.0 * 3 * 4 * 64 * 8, 2.0 * 3 * 4 * 16 * 8});
  CHECK(h.total == 2.0 * 3 * 4 * 8 * (256 + 64 + 16));
  CHECK(h.mha == 2.0 * 3 * 4 * 8 * 256);
  CHECK(h.ratio == 336.0 / 256.0);
  // T not divisible: T = 7, L = 3: T_l = 7, ceil(7/2) = 4, ceil(7/4) = 2.
  const ScoreCost p = score_flops(1, 7, 2, 1, 3);
  CHECK(p.per_level == std::vector<double>{2.0 * 2 * 49, 2.0 * 2 * 16, 2.0 * 2 * 4});
  CHECK(p.ratio == doctest::Approx(69.0 / 49.0).epsilon(1e-15));
  CHECK(p.ratio > (4.0 / 3.0) * (1.0 - std::pow(4.0, -3.0)));  // partial blocks cost a little more
  CHECK(score_flops(1, 1, 2, 1, 4).ratio == 4.0);               // T = 1: every level is one block
  check_error([] { score_flops(0, 8, 8, 2, 1); }, "B and T must be >= 1");
  check_error([] { score_flops(1, 0, 8, 2, 1); }, "B and T must be >= 1");
  check_error([] { score_flops(1, 8, 9, 2, 1); }, "D (9) must be a positive multiple of H (2)");
  check_error([] { score_flops(1, 8, 8, 0, 1); }, "must be a positive multiple of H (0)");
  check_error([] { score_flops(1, 8, 8, 2, 0); }, "L must be in [1, 62]");
}
