// The autograd engine: accumulation, graph shapes, freeing, guards, errors.
#include "helpers/check.hpp"

using namespace hkt;
using namespace hkt::test;

TEST_CASE("a tensor used twice receives the sum of both gradients") {
  Tensor x = from_vector(std::vector<double>{3.0}, {1}).set_requires_grad(true);
  Tensor y = x * x + x;  // dy/dx = 2x + 1 = 7
  y.backward(ones({1}, {DType::Float64}));
  CHECK(x.grad().item<double>() == doctest::Approx(7.0));
}

TEST_CASE("diamond graph") {
  Tensor x = from_vector(std::vector<double>{0.5, -1.0}, {2}).set_requires_grad(true);
  Tensor a = exp(x), b = a * 2.0, c = a * a;  // y = sum(2 e^x + e^2x): dy/dx = 2 e^x + 2 e^2x
  sum(b + c).backward();
  const auto g = x.grad().to_vector<double>();
  CHECK(g[0] == doctest::Approx(2 * std::exp(0.5) + 2 * std::exp(1.0)));
  CHECK(g[1] == doctest::Approx(2 * std::exp(-1.0) + 2 * std::exp(-2.0)));
}

TEST_CASE("gradients accumulate across backward calls into .grad") {
  Tensor x = from_vector(std::vector<double>{1.0, 2.0}, {2}).set_requires_grad(true);
  sum(x * 3.0).backward();
  sum(x * 3.0).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{6.0, 6.0});
  x.set_grad(Tensor());
  CHECK(!x.grad().defined());
}

TEST_CASE("backward twice through a freed graph is a clear error; retain_graph allows it") {
  Tensor x = leaf({3});
  Tensor y = sum(exp(x));
  y.backward();
  check_error([&] { y.backward(); }, "already freed");
  Tensor z = sum(tanh(x));
  x.set_grad(Tensor());
  z.backward(Tensor(), /*retain_graph=*/true);
  const auto g1 = x.grad().to_vector<double>();
  z.backward();
  const auto g2 = x.grad().to_vector<double>();
  for (size_t i = 0; i < g1.size(); ++i) CHECK(g2[i] == doctest::Approx(2 * g1[i]));
}

TEST_CASE("NoGradGuard and detach stop the graph") {
  Tensor x = leaf({2});
  {
    NoGradGuard ng;
    Tensor y = x * 2.0;
    CHECK(!y.requires_grad());
    CHECK(y.is_leaf());
  }
  CHECK((x * 2.0).requires_grad());
  Tensor d = x.detach();
  CHECK(!d.requires_grad());
  CHECK(d.storage() == x.storage());  // shares memory
  Tensor y = sum(x * d);              // d is a constant: dy/dx = d
  y.backward();
  CHECK(vals(x.grad()) == vals(d));
}

TEST_CASE("backward argument checks") {
  Tensor x = leaf({2, 2});
  Tensor y = x * 2.0;
  check_error([&] { y.backward(); }, "needs a single-element output");
  check_error([&] { y.backward(ones({3}, {DType::Float64})); }, "the gradient is float64[3]");
  y.backward(ones({2, 2}, {DType::Float64}));
  CHECK(vals(x.grad()) == std::vector<double>(4, 2.0));
  check_error([&] { zeros({2}).backward(); }, "does not require a gradient");
  check_error([&] { arange(3).set_requires_grad(true); }, "only floating tensors");
}

TEST_CASE("in-place modification of a saved tensor is detected") {
  Tensor x = leaf({3});
  Tensor a = x * 1.0;
  Tensor y = sum(exp(a));  // exp saves a (its input) and its output
  {
    NoGradGuard ng;
    fill_(a, 0.0);
  }
  check_error([&] { y.backward(); }, "modified in place");
  Tensor p = leaf({2});
  check_error([&] { fill_(p, 1.0); }, "requires grad");
}

TEST_CASE("deep chains do not overflow the stack (iterative sort)") {
  Tensor x = from_vector(std::vector<double>{1.0}, {1}).set_requires_grad(true);
  Tensor y = x;
  for (int i = 0; i < 40000; ++i) y = y * 1.0;
  y.backward(ones({1}, {DType::Float64}));
  CHECK(x.grad().item<double>() == 1.0);
  // Dropping a deep graph that never ran backward must not recurse either.
  Tensor z = x;
  for (int i = 0; i < 40000; ++i) z = z * 1.0;
  z = Tensor();
}

TEST_CASE("a gradient of the wrong shape from a user op is rejected") {
  struct Bad : Function {
    const char* name() const override { return "bad_op"; }
    std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override { return {in[0].meta()}; }
    std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>&) override {
      return {clone(in[0])};
    }
    std::vector<Tensor> backward(const std::vector<Tensor>&) override { return {zeros({7}, {DType::Float64})}; }
  };
  Tensor x = leaf({2});
  Tensor y = sum(apply_op<Bad>({x}));
  check_error([&] { y.backward(); }, "backward of 'bad_op': gradient for input 0 is float64[7]");
}

TEST_CASE("a forward that breaks its own shape rule is rejected") {
  struct Liar : Function {
    const char* name() const override { return "liar"; }
    std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override { return {in[0].meta()}; }
    std::vector<Tensor> forward(const std::vector<Tensor>&, const std::vector<TensorMeta>&) override {
      return {zeros({5})};
    }
    std::vector<Tensor> backward(const std::vector<Tensor>& g) override { return g; }
  };
  check_error([&] { (void)apply_op<Liar>({zeros({2})}); }, "liar: forward output 0 is float32[5]");
}

TEST_CASE("a leaf takes a gradient nothing else holds without copying it, and copies every other") {
  // The op's backward returns `fresh` (its own new buffer), `kept` (a tensor
  // the op also keeps), or a view of a larger buffer.
  struct Grad : Function {
    int mode;
    const void** seen;
    Tensor* kept;
    Grad(int m, const void** s, Tensor* k) : mode(m), seen(s), kept(k) {}
    const char* name() const override { return "grad_source"; }
    std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override { return {in[0].meta()}; }
    std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>&) override {
      return {clone(in[0])};
    }
    std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
      Tensor out;
      if (mode == 0) {
        out = clone(g[0]) * 2.0;
      } else if (mode == 1) {
        out = *kept = clone(g[0]);
      } else {
        out = narrow(full({2 * g[0].numel()}, 5.0, {DType::Float64}), 0, 1, g[0].numel());
      }
      *seen = out.raw_data();
      return {out};
    }
  };
  for (int mode = 0; mode < 3; ++mode) {
    INFO("mode " << mode);
    Tensor x = leaf({4});
    const void* seen = nullptr;
    Tensor kept;
    sum(apply_op<Grad>({x}, mode, &seen, &kept)).backward();
    const Tensor g = x.grad();
    REQUIRE(g.defined());
    CHECK(g.is_contiguous());
    CHECK((g.raw_data() == seen) == (mode == 0));  // taken as it is only when nothing else holds it
    if (mode == 1) {
      const double before = kept.to_vector<double>()[0];
      scale_(kept, 3.0);  // the op's own tensor changes; the gradient does not
      CHECK(g.to_vector<double>()[0] == before);
    }
    if (mode == 2) CHECK(g.to_vector<double>() == std::vector<double>(4, 5.0));
  }

  // One tensor that flows to two leaves (the backward of a + b): each leaf
  // gets a buffer of its own, so that updating one in place leaves the other.
  Tensor a = leaf({3}), b = leaf({3});
  sum(a + b).backward();
  CHECK(a.grad().raw_data() != b.grad().raw_data());
  Tensor ga = a.grad();
  scale_(ga, 0.5);
  CHECK(b.grad().to_vector<double>() == std::vector<double>(3, 1.0));

  // A seed the caller holds is never taken.
  Tensor w = leaf({2});
  const Tensor seed = full({2}, 4.0, {DType::Float64});
  w.backward(seed);
  CHECK(w.grad().raw_data() != seed.raw_data());
}

TEST_CASE("a Linear layer's forward and backward copy nothing: every gradient is taken as computed") {
  // The weight's gradient comes out of matmul's backward in the weight's own
  // layout (not as a transposed view), so AccumulateGrad takes it, as it takes
  // the input's and the bias's: no copy op runs at all.
  for (const Shape& xs : {Shape{6, 5}, Shape{2, 3, 5}}) {
    INFO("x " << shape_str(xs));
    nn::Linear lin(5, 4);
    const Tensor x = leaf(xs);
    const Tensor xf = to_dtype(x, DType::Float32).detach().set_requires_grad(true);
    Shape ys = xs;
    ys.back() = 4;
    const Tensor w = to_dtype(leaf(ys), DType::Float32).detach();  // a dense upstream gradient, as a loss gives
    profiler::reset();
    profiler::enable();
    sum(lin.forward(xf) * w).backward();
    profiler::enable(false);
    int64_t copies = 0;
    for (const profiler::Entry& e : profiler::entries())
      if (e.name == "fwd copy") copies += e.calls;
    CHECK(copies == 0);
    CHECK(lin.weight.grad().is_contiguous());
    CHECK(lin.weight.grad().shape() == Shape{4, 5});
    CHECK(xf.grad().defined());
    CHECK(lin.bias.grad().defined());
  }
  profiler::reset();
}
