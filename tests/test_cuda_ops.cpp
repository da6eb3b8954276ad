// Every op on CUDA against the same op on the CPU, forward and backward, on
// random inputs (float32: |gpu - cpu| <= 1e-4 |cpu| + 1e-5; float64 tighter).
// Without a GPU every case prints why it is skipped (cuda_test_main.hpp).
#include "cuda_test_main.hpp"
#include "helpers/check.hpp"

#include <functional>

using namespace hkt;
using hkt::test::check_close;

namespace {

Tensor gpu(const Tensor& t) { return to_device(t, Device::cuda()); }
Tensor cpu(const Tensor& t) { return to_device(t, Device::cpu()); }

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs f on CPU leaves and on their GPU copies; compares the outputs, then the
// gradients of sum(f(...) * w) for a random w, for every floating input.
void compare(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs, double rtol = 1e-4,
             double atol = 1e-5) {
  std::vector<Tensor> c, g;
  for (const Tensor& t : inputs) {
    Tensor a = t.detach(), b = gpu(t).detach();
    if (is_floating(t.dtype())) {
      a.set_requires_grad(true);
      b.set_requires_grad(true);
    }
    c.push_back(a);
    g.push_back(b);
  }
  const Tensor yc = f(c), yg = f(g);
  CHECK(yg.device() == Device::cuda());
  check_close(yg, yc, what + " (forward)", rtol, atol);
  if (!is_floating(yc.dtype()) || !yc.requires_grad()) return;
  Generator gen(99);
  const Tensor w = uniform(yc.shape(), -1.0, 1.0, {yc.dtype()}, &gen);
  sum(yc * w).backward();
  sum(yg * gpu(w)).backward();
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c[i].requires_grad()) continue;
    REQUIRE(g[i].grad().defined() == c[i].grad().defined());
    if (c[i].grad().defined()) check_close(g[i].grad(), c[i].grad(), what + " (grad of input " + std::to_string(i) + ")",
                                           rtol, atol);
  }
}

Tensor rnd(const Shape& s, double lo = -2.0, double hi = 2.0, uint64_t seed = 1, DType dt = DType::Float32) {
  Generator g(seed);
  return uniform(s, lo, hi, {dt}, &g);
}

}  // namespace

TEST_CASE("cuda ops: random numbers and dropout give the CPU's bits") {
  HKT_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    Generator a(5), b(5);
    // Box-Muller goes through log/cos, whose last bit may differ between the device and glibc.
    check_close(randn({1000}, {dt, Device::cuda()}, &a), randn({1000}, {dt}, &b), "randn",
                dt == DType::Float32 ? 1e-6 : 1e-12, 1e-12);
    check_close(uniform({777}, -1, 3, {dt, Device::cuda()}, &a), uniform({777}, -1, 3, {dt}, &b), "uniform", 1e-12, 0);
    const Tensor x = rnd({33, 17}, -1, 1, 3, dt);
    Generator c(8), d(8);
    check_close(dropout(gpu(x), 0.3, true, &c), dropout(x, 0.3, true, &d), "dropout", 1e-12, 0);
  }
  Generator c(8), d(8);
  compare("dropout grad", [&](const std::vector<Tensor>& in) {
    Generator& g = in[0].device().is_cpu() ? d : c;
    return dropout(in[0], 0.5, true, &g);
  }, {rnd({64, 9})});
}

TEST_CASE("cuda ops: unary elementwise, forward and backward") {
  HKT_REQUIRE_GPU();
  const Tensor x = rnd({37, 29}), pos = rnd({37, 29}, 0.1, 3.0, 2);
  const Tensor xt = transpose(rnd({29, 37}), 0, 1);  // non-contiguous
  std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>> ops = {
      {"neg", &hkt::neg}, {"exp", &hkt::exp}, {"tanh", &hkt::tanh}, {"sigmoid", &hkt::sigmoid}, {"relu", &hkt::relu},
      {"abs", &hkt::abs}, {"gelu_tanh", &hkt::gelu_tanh}, {"gelu_erf", &hkt::gelu_erf}};
  for (auto& [name, op] : ops) {
    auto f = op;
    compare(name, [f](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
    compare(name + " (transposed)", [f](const std::vector<Tensor>& in) { return f(in[0]); }, {xt});
  }
  for (auto& [name, op] : std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>>{
           {"log", &hkt::log}, {"sqrt", &hkt::sqrt}, {"rsqrt", &hkt::rsqrt}}) {
    auto f = op;
    compare(name, [f](const std::vector<Tensor>& in) { return f(in[0]); }, {pos});
  }
  compare("float64 tanh", [](const std::vector<Tensor>& in) { return tanh(in[0]); },
          {rnd({50}, -2, 2, 4, DType::Float64)}, 1e-12, 1e-14);
  compare("clamp", [](const std::vector<Tensor>& in) { return clamp(in[0], -0.5, 0.7); }, {x});
}

TEST_CASE("cuda ops: binary elementwise with broadcasting") {
  HKT_REQUIRE_GPU();
  const Tensor a = rnd({4, 1, 6}), b = rnd({5, 1}, -2, 2, 2), pos = rnd({4, 5, 6}, 0.5, 2, 3);
  const Tensor bt = transpose(rnd({6, 5}, -2, 2, 5), 0, 1);
  compare("add", [](const std::vector<Tensor>& in) { return in[0] + in[1]; }, {a, b});
  compare("sub", [](const std::vector<Tensor>& in) { return in[0] - in[1]; }, {a, bt});
  compare("mul", [](const std::vector<Tensor>& in) { return in[0] * in[1]; }, {a, bt});
  compare("div", [](const std::vector<Tensor>& in) { return in[0] / in[1]; }, {a, pos});
  compare("pow", [](const std::vector<Tensor>& in) { return pow(in[1], in[0]); }, {a, pos});
  compare("maximum", [](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); }, {a, b});
  compare("minimum", [](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); }, {a, bt});
  compare("scalar", [](const std::vector<Tensor>& in) { return in[0] * 2.5 + 1.0; }, {a});
  compare("lt", [](const std::vector<Tensor>& in) { return lt(in[0], in[1]); }, {a, b});
  const Tensor i = from_vector(std::vector<int64_t>{1, 5, -3, 7}, {4}), j = from_vector(std::vector<int64_t>{2}, {1});
  compare("int64 add", [](const std::vector<Tensor>& in) { return in[0] + in[1]; }, {i, j});
  compare("int64 eq", [](const std::vector<Tensor>& in) { return eq(in[0], in[1]); }, {i, j});
  compare("to_dtype", [](const std::vector<Tensor>& in) { return to_dtype(in[0], DType::Float64); }, {a});
}

TEST_CASE("cuda ops: reductions") {
  HKT_REQUIRE_GPU();
  const Tensor x = rnd({6, 70, 9});
  compare("sum all", [](const std::vector<Tensor>& in) { return sum(in[0]); }, {x});
  compare("sum dim 1", [](const std::vector<Tensor>& in) { return sum(in[0], {1}); }, {x});
  compare("sum dims 0,2 keepdim", [](const std::vector<Tensor>& in) { return sum(in[0], {0, 2}, true); }, {x});
  compare("mean", [](const std::vector<Tensor>& in) { return mean(in[0], {-1}); }, {x});
  compare("var", [](const std::vector<Tensor>& in) { return var(in[0], {1}); }, {x});
  compare("max dim 1", [](const std::vector<Tensor>& in) { return max(in[0], {1}); }, {x});
  compare("sum transposed", [](const std::vector<Tensor>& in) { return sum(transpose(in[0], 0, 2), {0}); }, {x});
  compare("sum big", [](const std::vector<Tensor>& in) { return sum(in[0]); }, {rnd({300000}, -1, 1, 7)});
  const Tensor i = from_vector(std::vector<int64_t>{4, -9, 2, 8}, {2, 2});
  compare("int64 sum", [](const std::vector<Tensor>& in) { return sum(in[0], {0}); }, {i});
}

TEST_CASE("cuda ops: matmul and bmm (cuBLAS)") {
  HKT_REQUIRE_GPU();
  const Tensor a = rnd({7, 13}), b = rnd({13, 5}, -2, 2, 2);
  compare("matmul 2-D", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b});
  compare("matmul a^T b", [](const std::vector<Tensor>& in) { return matmul(transpose(in[0], 0, 1), in[1]); },
          {rnd({13, 7}), b});
  compare("matmul batched", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
          {rnd({3, 4, 7, 13}), rnd({3, 4, 13, 5}, -2, 2, 3)});
  compare("matmul broadcast b", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
          {rnd({3, 7, 13}), b});
  compare("matmul broadcast batch", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
          {rnd({2, 1, 7, 13}), rnd({1, 3, 13, 5}, -2, 2, 4)});
  compare("bmm", [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
          {rnd({4, 9, 8}), rnd({4, 8, 11}, -2, 2, 5)});
  compare("matvec", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, rnd({13}, -1, 1, 6)});
  compare("float64 matmul", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
          {rnd({9, 31}, -1, 1, 7, DType::Float64), rnd({31, 4}, -1, 1, 8, DType::Float64)}, 1e-12, 1e-13);
  compare("big matmul", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
          {rnd({300, 257}, -1, 1, 9), rnd({257, 129}, -1, 1, 10)}, 1e-4, 1e-4);
}

TEST_CASE("cuda ops: a Linear layer on the GPU") {
  HKT_REQUIRE_GPU();
  const Tensor x = rnd({8, 16, 32}), w = rnd({32, 24}, -0.3, 0.3, 2), b = rnd({24}, -0.1, 0.1, 3);
  compare("linear", [](const std::vector<Tensor>& in) { return gelu(matmul(in[0], in[1]) + in[2], true); },
          {x, w, b});
}

TEST_CASE("cuda ops: softmax, log_softmax, layer_norm") {
  HKT_REQUIRE_GPU();
  const Tensor x = rnd({5, 300}, -4, 4);
  compare("softmax", [](const std::vector<Tensor>& in) { return softmax(in[0], -1); }, {x});
  compare("log_softmax", [](const std::vector<Tensor>& in) { return log_softmax(in[0], -1); }, {x});
  compare("softmax dim 0", [](const std::vector<Tensor>& in) { return softmax(in[0], 0); }, {x});
  compare("log_softmax dim 1 of 3", [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); },
          {rnd({3, 7, 11})});
  const Tensor m = where(gt(rnd({4, 9}, 0, 1, 4), 0.5), rnd({4, 9}), full({4, 9}, -INFINITY));
  compare("softmax with -inf", [](const std::vector<Tensor>& in) { return softmax(in[0], -1); }, {m});
  compare("layer_norm", [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); },
          {rnd({6, 10, 64}), rnd({64}, 0.5, 1.5, 2), rnd({64}, -0.5, 0.5, 3)});
  compare("layer_norm no affine", [](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), Tensor()); },
          {rnd({300, 33})});
  compare("layer_norm many rows", [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); },
          {rnd({1000, 24}), rnd({24}, 0.5, 1.5, 2), rnd({24}, -0.5, 0.5, 3)}, 1e-4, 1e-4);
}

TEST_CASE("cuda ops: indexing, embedding, cat, where") {
  HKT_REQUIRE_GPU();
  const Tensor w = rnd({50, 16});
  const Tensor ids = from_vector(std::vector<int64_t>{3, 7, 3, 49, 0, 7, 7, 12}, {2, 4});
  compare("embedding", [](const std::vector<Tensor>& in) { return embedding(in[0], in[1]); }, {w, ids});
  compare("index_select dim 1", [](const std::vector<Tensor>& in) { return index_select(in[0], 1, in[1]); },
          {rnd({3, 20, 5}), from_vector(std::vector<int64_t>{19, 0, 4, 4}, {4})});
  compare("gather", [](const std::vector<Tensor>& in) { return gather(in[0], 1, in[1]); },
          {rnd({3, 6}), from_vector(std::vector<int64_t>{0, 5, 5, 1, 2, 2, 3, 0, 4}, {3, 3})});
  compare("cat", [](const std::vector<Tensor>& in) { return cat({in[0], in[1]}, 1); }, {rnd({3, 4}), rnd({3, 2})});
  compare("stack", [](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, 0); }, {rnd({3, 4}), rnd({3, 4})});
  const Tensor c = gt(rnd({4, 5}, 0, 1, 9), 0.4);
  compare("where", [](const std::vector<Tensor>& in) { return where(in[2], in[0], in[1]); },
          {rnd({4, 5}), rnd({1, 5}), c});
  compare("masked_fill", [](const std::vector<Tensor>& in) { return masked_fill(in[0], in[1], -3.0); },
          {rnd({4, 5}), c});
  test::check_error([&] { (void)embedding(gpu(w), gpu(from_vector(std::vector<int64_t>{2, 50}, {2}))); }, "50");
}

TEST_CASE("cuda ops: cross_entropy") {
  HKT_REQUIRE_GPU();
  const Tensor x = rnd({12, 10}, -3, 3);
  const Tensor t = from_vector(std::vector<int64_t>{0, 9, 3, -100, 4, 4, 1, 2, 8, -100, 5, 6}, {12});
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None})
    compare("cross_entropy", [r](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1], -100, r); },
            {x, t});
  test::check_error([&] { (void)cross_entropy(gpu(x), gpu(from_vector(std::vector<int64_t>(12, 10), {12}))); },
                    "outside");
}

TEST_CASE("cuda ops: causal depthwise conv1d") {
  HKT_REQUIRE_GPU();
  for (int64_t s : {1, 2})
    for (int64_t T : {1, 7, 64})
      compare("conv stride " + std::to_string(s) + " T " + std::to_string(T),
              [s](const std::vector<Tensor>& in) { return causal_depthwise_conv1d(in[0], in[1], in[2], s); },
              {rnd({3, T, 8}), rnd({8, 3}, -1, 1, 2), rnd({8}, -1, 1, 3)});
}

TEST_CASE("cuda ops: gated_mix") {
  HKT_REQUIRE_GPU();
  for (const Shape& s : {Shape{7}, Shape{3, 100, 8}, Shape{2, 1000, 40}})
    compare("gated_mix " + shape_str(s), [](const std::vector<Tensor>& in) { return gated_mix(in[0], in[1], in[2]); },
            {rnd(s), rnd(s, -1, 1, 2), rnd({s.back()}, 0, 1, 3)});
}

TEST_CASE("cuda ops: optimizer updates") {
  HKT_REQUIRE_GPU();
  NoGradGuard no_grad;
  Tensor p = rnd({1000}), g = rnd({1000}, -1, 1, 2), m = rnd({1000}, -0.1, 0.1, 3), v = rnd({1000}, 0, 0.1, 4);
  Tensor pg = gpu(p), gg = gpu(g), mg = gpu(m), vg = gpu(v);
  for (int64_t step = 1; step <= 3; ++step) {
    adamw_update_(p, g, m, v, 1e-2, 0.9, 0.999, 1e-8, 0.01, step);
    adamw_update_(pg, gg, mg, vg, 1e-2, 0.9, 0.999, 1e-8, 0.01, step);
  }
  check_close(pg, p, "adamw param");
  check_close(mg, m, "adamw exp_avg");
  check_close(vg, v, "adamw exp_avg_sq");
  Tensor buf = zeros({1000}), bufg = gpu(buf);
  sgd_update_(p, g, buf, 0.1, 0.9, 0.0, 1e-4, true, true);
  sgd_update_(pg, gg, bufg, 0.1, 0.9, 0.0, 1e-4, true, true);
  check_close(pg, p, "sgd param");
  const Tensor big = rnd({100000}, -1, 1, 5);
  CHECK(sum_of_squares(gpu(big)) == doctest::Approx(sum_of_squares(big)).epsilon(1e-12));
  scale_(p, 0.5);
  scale_(pg, 0.5);
  check_close(pg, p, "scale_");

  // Many tensors at once (gradient clipping): 150 of them, so three launches of
  // 64, sizes around a kernel chunk (16384) and empty ones, both dtypes. Each
  // sum is the one-tensor op's to the bit, and close to the CPU's.
  std::vector<Tensor> cpu_ts, gpu_ts;
  for (int i = 0; i < 150; ++i) {
    const int64_t n = i % 7 == 3 ? 0 : (i * 2731) % 40000 + (i % 5 == 0 ? 16384 : 1);
    cpu_ts.push_back(rnd({n}, -1, 1, uint64_t(100 + i), i % 3 == 0 ? DType::Float64 : DType::Float32));
    gpu_ts.push_back(gpu(cpu_ts.back()));
  }
  const std::vector<double> sums = sum_of_squares_multi(gpu_ts), cpu_sums = sum_of_squares_multi(cpu_ts);
  REQUIRE(sums.size() == gpu_ts.size());
  for (size_t i = 0; i < gpu_ts.size(); ++i) {
    INFO("tensor " << i << " of " << gpu_ts[i].numel());
    CHECK(sums[i] == sum_of_squares(gpu_ts[i]));
    CHECK(sums[i] == doctest::Approx(cpu_sums[i]).epsilon(1e-12));
  }
  std::vector<Tensor> one_by_one;
  for (const Tensor& t : gpu_ts) one_by_one.push_back(clone(t));
  scale_multi_(gpu_ts, 0.3);
  for (size_t i = 0; i < gpu_ts.size(); ++i) {
    scale_(one_by_one[i], 0.3);
    CHECK(to_dtype(gpu_ts[i], DType::Float64).to_vector<double>() ==
          to_dtype(one_by_one[i], DType::Float64).to_vector<double>());
  }
}

TEST_CASE("cuda ops: a classifier trains on the GPU like on the CPU (model.to, nn::AdamW)") {
  HKT_REQUIRE_GPU();
  for (const char* preset : {"hkt-tiny", "mha-tiny"}) {
    nn::ClassifierConfig cfg = nn::ClassifierConfig::preset(preset);
    cfg.vocab = 12;
    cfg.classes = 3;
    cfg.max_len = 40;
    cfg.dropout = 0.0;
    Generator g1(3), g2(3), gd(4);
    nn::SequenceClassifier a(cfg, &g1), b(cfg, &g2);
    b.to(Device::cuda());
    nn::AdamW oa(nn::decay_groups(a, 1e-3, 0.01)), ob(nn::decay_groups(b, 1e-3, 0.01));
    const Tensor x = to_dtype(mul(rand({4, 37}, {}, &gd), 11.99), DType::Int64);
    const Tensor valid = lt(reshape(arange(37), {1, 37}), from_vector(std::vector<int64_t>{37, 20, 5, 1}, {4, 1}));
    const Tensor y = from_vector(std::vector<int64_t>{0, 2, 1, 2}, {4});
    for (int step = 0; step < 3; ++step) {
      oa.zero_grad();
      ob.zero_grad();
      const Tensor la = cross_entropy(a.forward(x, valid), y);
      const Tensor lb = cross_entropy(b.forward(gpu(x), gpu(valid)), gpu(y));
      check_close(lb, la, std::string(preset) + " loss", 1e-4, 1e-6);
      la.backward();
      lb.backward();
      oa.step();
      ob.step();
    }
    const nn::NamedTensors sa = a.state_dict(), sb = b.state_dict();
    REQUIRE(sa.size() == sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      CHECK(sb[i].second.device() == Device::cuda());
      check_close(sb[i].second, sa[i].second, std::string(preset) + " " + sa[i].first, 1e-3, 1e-5);
    }
  }
}
