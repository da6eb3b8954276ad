// Modules: naming, counting, train/eval, state dicts, layers, init.
#include "helpers/check.hpp"
#include "hkt/models/init.hpp"
#include "hkt/models/layers.hpp"

using namespace hkt;
using namespace hkt::nn;
using namespace hkt::test;

namespace {
struct Attn : Module {
  std::shared_ptr<ModuleList> wq;
  Attn() : Module("Attn") {
    wq = register_module("wq", std::make_shared<ModuleList>());
    wq->push_back(std::make_shared<Linear>(4, 4, false));
    wq->push_back(std::make_shared<Linear>(4, 4));
    register_buffer("mask", ones({3}));
  }
};
struct TestBlock : Module {
  TestBlock() : Module("TestBlock") {
    register_module("attn", std::make_shared<Attn>());
    register_module("ln", std::make_shared<LayerNorm>(4));
  }
};
struct Net : Module {
  std::shared_ptr<ModuleList> blocks;
  Net() : Module("Net") {
    blocks = register_module("blocks", std::make_shared<ModuleList>());
    blocks->push_back(std::make_shared<TestBlock>());
    blocks->push_back(std::make_shared<TestBlock>());
    register_module("drop", std::make_shared<Dropout>(0.5));
  }
};
}  // namespace

TEST_CASE("hierarchical names, counts, summary") {
  Net net;
  const auto ps = net.named_parameters();
  std::vector<std::string> names;
  for (auto& [n, t] : ps) names.push_back(n);
  CHECK(names == std::vector<std::string>{"blocks.0.attn.wq.0.weight", "blocks.0.attn.wq.1.weight",
                                          "blocks.0.attn.wq.1.bias", "blocks.0.ln.weight", "blocks.0.ln.bias",
                                          "blocks.1.attn.wq.0.weight", "blocks.1.attn.wq.1.weight",
                                          "blocks.1.attn.wq.1.bias", "blocks.1.ln.weight", "blocks.1.ln.bias"});
  CHECK(net.num_parameters() == 2 * (16 + 16 + 4 + 4 + 4));
  CHECK(net.named_buffers().at(1).first == "blocks.1.attn.mask");
  CHECK(net.state_dict().size() == 12);
  for (auto& t : net.parameters()) CHECK(t.requires_grad());
  const std::string s = net.summary();
  CHECK(s.find("blocks.1.attn.wq.1.weight") != std::string::npos);
  CHECK(s.find("total") != std::string::npos);
  CHECK(s.find("88") != std::string::npos);
  auto mods = net.named_modules();
  CHECK(mods.size() == 1 + 1 + 2 * (1 + 1 + 1 + 2 + 1) + 1);
  CHECK(mods[3].first == "blocks.0.attn");
  check_error([&] { net.register_buffer("drop", zeros({1})); }, "already registered");
  check_error([&] { net.register_parameter("a.b", zeros({1})); }, "invalid member name 'a.b'");
}

TEST_CASE("train/eval reaches every descendant and switches dropout") {
  Net net;
  auto drop = std::dynamic_pointer_cast<Dropout>(net.named_children().back().second);
  REQUIRE(drop);
  const Tensor x = ones({1000});
  net.eval();
  CHECK(!drop->is_training());
  CHECK(drop->forward(x).to_vector<float>() == x.to_vector<float>());
  net.train();
  CHECK(net.blocks->at<TestBlock>(1)->is_training());
  const auto y = drop->forward(x).to_vector<float>();
  int zeros_n = 0;
  for (float v : y) {
    CHECK((v == 0.0f || v == 2.0f));
    zeros_n += v == 0.0f;
  }
  CHECK(zeros_n > 400);
  CHECK(zeros_n < 600);
}

TEST_CASE("zero_grad and load_state_dict") {
  manual_seed(3);
  Net a;
  manual_seed(4);
  Net b;
  sum(a.parameters()[0]).backward();
  CHECK(a.parameters()[0].grad().defined());
  a.zero_grad();
  CHECK(!a.parameters()[0].grad().defined());
  CHECK(vals(a.parameters()[0]) != vals(b.parameters()[0]));
  Tensor keep = b.parameters()[0];  // the same tensor must be updated in place
  b.load_state_dict(a.state_dict());
  CHECK(vals(keep) == vals(a.parameters()[0]));
  NamedTensors sd = a.state_dict();
  sd.pop_back();
  check_error([&] { b.load_state_dict(sd); }, "missing tensor 'blocks.1.attn.mask'");
  b.load_state_dict(sd, /*strict=*/false);
  sd = a.state_dict();
  sd.emplace_back("extra", zeros({1}));
  check_error([&] { b.load_state_dict(sd); }, "unexpected tensor 'extra'");
  sd = a.state_dict();
  sd[0].second = zeros({4, 5});
  const auto before = vals(b.parameters()[1]);
  check_error([&] { b.load_state_dict(sd); }, "'blocks.0.attn.wq.0.weight' has shape [4, 5] but the model expects [4, 4]");
  CHECK(vals(b.parameters()[1]) == before);  // nothing was modified
}

TEST_CASE("same seed, same model, bit for bit") {
  manual_seed(11);
  Net a;
  manual_seed(11);
  Net b;
  for (size_t i = 0; i < a.parameters().size(); ++i) CHECK(vals(a.parameters()[i]) == vals(b.parameters()[i]));
  Generator g1(5), g2(5);
  Linear l1(8, 3, true, {DType::Float32, &g1}), l2(8, 3, true, {DType::Float32, &g2});
  CHECK(l1.weight.to_vector<float>() == l2.weight.to_vector<float>());
}

TEST_CASE("initialisation bounds") {
  Generator g(1);
  Tensor w = empty({64, 100});
  init::kaiming_uniform_(w, std::sqrt(5.0), &g);
  CHECK(max(abs(w)).item<float>() <= 0.1f);  // 1 / sqrt(100)
  CHECK(max(abs(w)).item<float>() > 0.09f);
  init::xavier_uniform_(w, 1.0, &g);
  const double b = std::sqrt(6.0 / 164.0);
  CHECK(max(abs(w)).item<float>() <= b);
  CHECK(max(abs(w)).item<float>() > 0.95 * b);
  init::normal_(w, 0.0, 0.02, &g);
  CHECK(std::sqrt(var(to_dtype(w, DType::Float64)).item<double>()) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(init::fans(empty({5, 3, 7})) == std::pair<int64_t, int64_t>{21, 35});
}

TEST_CASE("layers: shapes and gradients in float64") {
  Generator g(2);
  const LayerOptions o{DType::Float64, &g};
  Linear lin(5, 3, true, o);
  CHECK(lin.forward(ones({2, 7, 5}, {DType::Float64})).shape() == Shape{2, 7, 3});
  gradcheck([&](const std::vector<Tensor>& in) { return lin.forward(in[0]); },
            {leaf({4, 5}), lin.weight, lin.bias});
  LayerNorm ln(6, 1e-5, true, o);
  gradcheck([&](const std::vector<Tensor>& in) { return ln.forward(in[0]); }, {leaf({3, 6}), ln.weight, ln.bias});
  FeedForward ff(4, 8, 0.0, false, o);
  gradcheck([&](const std::vector<Tensor>& in) { return ff.forward(in[0]); },
            {leaf({2, 3, 4}), ff.fc1->weight, ff.fc2->bias});
  Embedding emb(10, 4, o);
  const Tensor ids = from_vector(std::vector<int64_t>{1, 3, 3, 9}, {2, 2});
  CHECK(emb.forward(ids).shape() == Shape{2, 2, 4});
  gradcheck([&](const std::vector<Tensor>&) { return emb.forward(ids); }, {emb.weight});
  CausalDepthwiseConv1d conv(4, 3, 2, true, o);
  CHECK(conv.forward(ones({2, 7, 4}, {DType::Float64})).shape() == Shape{2, 4, 4});
  gradcheck([&](const std::vector<Tensor>& in) { return conv.forward(in[0]); },
            {leaf({2, 7, 4}), conv.weight, conv.bias});
  check_error([&] { (void)lin.forward(ones({2, 4}, {DType::Float64})); }, "does not end in in_features = 5");
  check_error([] { Dropout d(1.0); }, "p must be in [0, 1)");
}
