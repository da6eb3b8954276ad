// An outside consumer of hkt: only <hkt/tasks.hpp> and hkt::hkt.
//
//   (a) a few built-in ops with backward, checked against gradients worked
//       out by hand;
//   (b) an op defined here, outside the library, through the same public
//       mechanism the built-in ops use (hkt::Function + hkt::KernelTable):
//       cube(x) = x^3 with its own CPU loops, registered with the library's
//       op registry like the built-in ops, checked with hkt::gradcheck in
//       float64 and put through the library's op-test harness
//       (tests/helpers/op_harness.hpp). docs/extending.md walks through it.
//
// Exits 0 when every check passes, 1 otherwise.
#include <hkt/tasks.hpp>
#include <hkt/kernels/registry.hpp>

#include "helpers/op_harness.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++g_failures;
}

bool near(double a, double b, double tol = 1e-12) { return std::abs(a - b) <= tol * (1 + std::abs(b)); }

// ---------------------------------------------------------------------------
// The cube op: y = x^3, dx = g * 3 x^2.
//
// 1. Kernels: plain loops over contiguous buffers, one per dtype, registered
//    in a KernelTable per direction. A CUDA backend would add its own entries
//    with set(DeviceType::CUDA, ...).
using CubeSig = void(const void* x, void* y, int64_t n);
using CubeGradSig = void(const void* x, const void* g, void* gx, int64_t n);

template <class T>
void cube_cpu(const void* xv, void* yv, int64_t n) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
}

template <class T>
void cube_grad_cpu(const void* xv, const void* gv, void* gxv, int64_t n) {
  const T* x = static_cast<const T*>(xv);
  const T* g = static_cast<const T*>(gv);
  T* gx = static_cast<T*>(gxv);
  for (int64_t i = 0; i < n; ++i) gx[i] = g[i] * T(3) * x[i] * x[i];  // from y = x * x * x
}

hkt::KernelTable<CubeSig>& cube_kernels() {
  static hkt::KernelTable<CubeSig> table = [] {
    hkt::KernelTable<CubeSig> t("cube");
    t.set(hkt::DeviceType::CPU, hkt::DType::Float32, &cube_cpu<float>);
    t.set(hkt::DeviceType::CPU, hkt::DType::Float64, &cube_cpu<double>);
    return t;
  }();
  return table;
}

hkt::KernelTable<CubeGradSig>& cube_grad_kernels() {
  static hkt::KernelTable<CubeGradSig> table = [] {
    hkt::KernelTable<CubeGradSig> t("cube_backward");
    t.set(hkt::DeviceType::CPU, hkt::DType::Float32, &cube_grad_cpu<float>);
    t.set(hkt::DeviceType::CPU, hkt::DType::Float64, &cube_grad_cpu<double>);
    return t;
  }();
  return table;
}

// Known to the registry (supports(), missing_kernels(), the harness): CPU
// float32 and float64 required, no CUDA kernels (kNone).
const bool kCubeRegistered = [] {
  hkt::register_op({&cube_kernels(), hkt::kernels::kFloat, hkt::kernels::kNone});
  hkt::register_op({&cube_grad_kernels(), hkt::kernels::kFloat, hkt::kernels::kNone});
  return true;
}();

// 2. The Function: name, shape rule, forward, backward.
class Cube final : public hkt::Function {
 public:
  const char* name() const override { return "cube"; }

  std::vector<hkt::TensorMeta> infer(const std::vector<hkt::Tensor>& in) const override {
    HKT_CHECK(in.size() == 1, "cube: expected 1 input, got ", in.size());
    HKT_CHECK(hkt::is_floating(in[0].dtype()), "cube: expected a floating tensor, got ", in[0].dtype());
    return {in[0].meta()};  // same shape, dtype and device as x
  }

  std::vector<hkt::Tensor> forward(const std::vector<hkt::Tensor>& in,
                                   const std::vector<hkt::TensorMeta>& out) override {
    const hkt::Tensor x = hkt::contiguous(in[0]);  // the kernel reads a dense buffer
    hkt::Tensor y = hkt::Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    cube_kernels().get(x.device(), x.dtype())(x.raw_data(), y.raw_data(), x.numel());
    x_ = x;  // backward needs x (version-stamped: modifying it in place is caught)
    return {y};
  }

  std::vector<hkt::Tensor> backward(const std::vector<hkt::Tensor>& grad_out) override {
    if (!needs_input_grad(0)) return {hkt::Tensor()};
    const hkt::Tensor x = x_.get(name());
    const hkt::Tensor g = hkt::contiguous(grad_out[0]);
    hkt::Tensor gx = hkt::Tensor::empty(x.shape(), x.dtype(), x.device());
    cube_grad_kernels().get(x.device(), x.dtype())(x.raw_data(), g.raw_data(), gx.raw_data(), x.numel());
    return {gx};
  }

 private:
  hkt::SavedTensor x_;
};

// 3. The user-facing function.
hkt::Tensor cube(const hkt::Tensor& x) { return hkt::apply_op<Cube>({x}); }

// ---------------------------------------------------------------------------
// swish(x) = x * sigmoid(x), written with built-in ops only (no kernels of
// its own): it runs wherever those ops run. docs/extending.md, section 6.
class Swish final : public hkt::Function {
 public:
  const char* name() const override { return "swish"; }
  std::vector<hkt::TensorMeta> infer(const std::vector<hkt::Tensor>& in) const override {
    HKT_CHECK(in.size() == 1 && hkt::is_floating(in[0].dtype()), "swish: expected one floating tensor");
    return {in[0].meta()};
  }
  std::vector<hkt::Tensor> forward(const std::vector<hkt::Tensor>& in,
                                   const std::vector<hkt::TensorMeta>&) override {
    const hkt::Tensor s = hkt::sigmoid(in[0]);  // grad mode is off in forward: no graph is recorded
    x_ = in[0];
    s_ = s;
    return {in[0] * s};
  }
  std::vector<hkt::Tensor> backward(const std::vector<hkt::Tensor>& grad_out) override {
    const hkt::Tensor x = x_.get(name()), s = s_.get(name());
    return {grad_out[0] * s * (1.0 + x * (1.0 - s))};  // d/dx x s(x) = s (1 + x (1 - s))
  }

 private:
  hkt::SavedTensor x_, s_;
};

hkt::Tensor swish(const hkt::Tensor& x) { return hkt::apply_op<Swish>({x}); }

void swish_op() {
  using namespace hkt;
  Tensor a = randn({3, 5}, {DType::Float64}).set_requires_grad(true);
  bool ok = true;
  try {
    gradcheck([](const std::vector<Tensor>& in) { return swish(in[0]); }, {a});
    gradcheck([](const std::vector<Tensor>& in) { return swish(transpose(in[0], 0, 1) * 2.0); }, {a});
  } catch (const Error& e) {
    std::printf("     %s\n", e.what());
    ok = false;
  }
  check(ok, "swish: gradcheck in float64");
  Tensor x = from_vector(std::vector<float>{-3.0f, 0.0f, 2.0f}, {3});
  check(swish(x).to_vector<float>() == (x * sigmoid(x)).to_vector<float>(), "swish: forward equals x * sigmoid(x)");
}

// ---------------------------------------------------------------------------

void builtin_ops() {
  using namespace hkt;
  // L = sum(tanh(a) * b + a * a), a [2, 3], b [3] broadcast over rows.
  //   dL/da = b * (1 - tanh(a)^2) + 2 a,   dL/db[j] = sum_i tanh(a[i, j])
  const std::vector<double> av{0.5, -1.0, 2.0, 0.25, 1.5, -0.75};
  const std::vector<double> bv{3.0, -2.0, 0.5};
  Tensor a = from_vector(av, {2, 3}).set_requires_grad(true);
  Tensor b = from_vector(bv, {3}).set_requires_grad(true);
  Tensor loss = sum(tanh(a) * b + a * a);
  loss.backward();

  const std::vector<double> ga = a.grad().to_vector<double>();
  const std::vector<double> gb = b.grad().to_vector<double>();
  bool ok_a = ga.size() == 6, ok_b = gb.size() == 3;
  double expect_loss = 0;
  for (size_t i = 0; i < 6 && ok_a; ++i) {
    const double t = std::tanh(av[i]);
    expect_loss += t * bv[i % 3] + av[i] * av[i];
    ok_a = near(ga[i], bv[i % 3] * (1 - t * t) + 2 * av[i]);
  }
  for (size_t j = 0; j < 3 && ok_b; ++j) ok_b = near(gb[j], std::tanh(av[j]) + std::tanh(av[3 + j]));
  check(near(loss.item<double>(), expect_loss), "built-in ops: forward value");
  check(ok_a, "built-in ops: gradient of a (broadcast product, tanh, square)");
  check(ok_b, "built-in ops: gradient of b (summed over the broadcast dim)");

  // Through a view: the gradient of a transposed slice lands in the right places.
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor y = sum(transpose(x, 0, 1) * 2.0);
  y.backward();
  check(x.grad().to_vector<double>() == std::vector<double>{2, 2, 2, 2, 2, 2},
        "built-in ops: gradient through a view");

  // Matrix product: L = sum(A @ B), A [2, 3], B [3, 2]:
  //   dL/dA[i, k] = sum_j B[k, j],   dL/dB[k, j] = sum_i A[i, k]
  Tensor A = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor B = from_vector(std::vector<double>{1, -1, 2, 0.5, -3, 4}, {3, 2}).set_requires_grad(true);
  sum(matmul(A, B)).backward();
  check(A.grad().to_vector<double>() == std::vector<double>{0, 2.5, 1, 0, 2.5, 1}, "built-in ops: matmul dA");
  check(B.grad().to_vector<double>() == std::vector<double>{5, 5, 7, 7, 9, 9}, "built-in ops: matmul dB");
}

void custom_op() {
  using namespace hkt;
  // Forward against the same thing written with built-in ops, in float32.
  Tensor x32 = from_vector(std::vector<float>{-2.0f, -0.5f, 0.0f, 1.0f, 3.0f}, {5});
  const std::vector<float> y32 = cube(x32).to_vector<float>();
  const std::vector<float> ref32 = (x32 * x32 * x32).to_vector<float>();
  check(y32 == ref32, "cube: float32 forward equals x * x * x");

  // A known gradient: d/dx sum(cube(x)) = 3 x^2.
  Tensor x = from_vector(std::vector<double>{-2.0, 0.5, 3.0}, {3}).set_requires_grad(true);
  sum(cube(x)).backward();
  check(x.grad().to_vector<double>() == std::vector<double>{12.0, 0.75, 27.0}, "cube: gradient is 3 x^2");

  // gradcheck in float64: contiguous, a transposed (non-contiguous) input,
  // and cube composed with built-in ops on both sides.
  Tensor a = randn({3, 4}, {DType::Float64}).set_requires_grad(true);
  Tensor at = transpose(randn({4, 3}, {DType::Float64}), 0, 1).detach().set_requires_grad(true);
  bool ok = true;
  try {
    gradcheck([](const std::vector<Tensor>& in) { return cube(in[0]); }, {a});
    gradcheck([](const std::vector<Tensor>& in) { return cube(in[0]); }, {at});
    gradcheck([](const std::vector<Tensor>& in) { return sum(cube(tanh(in[0]) * in[1]), {1}); }, {a, at});
  } catch (const Error& e) {
    std::printf("     %s\n", e.what());
    ok = false;
  }
  check(ok, "cube: gradcheck in float64 (contiguous, transposed, composed)");

  // The shape rule's error names the op.
  bool threw = false;
  try {
    cube(arange(4));  // int64
  } catch (const Error& e) {
    threw = std::string(e.what()).find("cube") != std::string::npos;
  }
  check(threw, "cube: an int64 input is refused with an error naming the op");

  // A saved input modified in place after the forward is caught in backward.
  Tensor w = from_vector(std::vector<double>{1.0, 2.0}, {2}).set_requires_grad(true);
  Tensor v = w * 1.0;  // a non-leaf we can later modify (under NoGradGuard)
  Tensor out = sum(cube(v));
  {
    NoGradGuard no_grad;
    fill_(v, 5.0);
  }
  threw = false;
  try {
    out.backward();
  } catch (const Error& e) {
    threw = std::string(e.what()).find("cube") != std::string::npos;
  }
  check(threw, "cube: backward refuses an input modified in place after the forward");
}

// cube through the library's op-test harness, as the built-in ops: float64
// gradcheck, float32 against float64, 1 against 2 threads, and a bad input, on
// random, transposed, sliced, size-1 and empty shapes.
void harness_op() {
  using namespace hkt;
  using harness::Arg;
  using harness::Layout;
  check(kCubeRegistered && supports("cube", DeviceType::CPU, DType::Float64) &&
            !supports("cube", DeviceType::CUDA, DType::Float32),
        "cube: registered, with CPU kernels only");
  check(missing_kernels().empty(), "registry: no op lacks a required kernel");
  harness::OpEntry e;
  e.op = "cube";
  e.kernels = {"cube", "cube_backward"};
  e.cases = [](std::mt19937_64& rng) {
    const harness::Fn f = [](const std::vector<Tensor>& in) { return cube(in[0]); };
    const Shape s = harness::shape(rng, 2, 2, 5);
    return std::vector<harness::Case>{
        {"contiguous", {Arg{s}}, f},
        {"transposed", {Arg{s, Layout::Transposed}}, f},
        {"sliced", {Arg{s, Layout::Sliced}}, f},
        {"size-1 and empty", {Arg{{1, 0, 3}}}, f},
    };
  };
  e.bad_input = [] { cube(arange(4)); };
  e.bad_needle = "cube: expected a floating tensor";
  check(harness::run({e}) == 0, "cube: the op-test harness passes");
}

// A tiny model that uses cube: y = sum_j v_j * cube(w_j x + b_j), fitted to a
// target cubic by gradient descent; the loss must fall by 100x.
void train_with_custom_op() {
  using namespace hkt;
  manual_seed(1);
  const int64_t N = 64, H = 4;
  Tensor x = uniform({N, 1}, -1.0, 1.0);
  Tensor target = 0.5 * x * x * x - 0.25 * x;
  auto l1 = std::make_shared<nn::Linear>(1, H);
  auto l2 = std::make_shared<nn::Linear>(H, 1);
  std::vector<Tensor> params = l1->parameters();
  for (const Tensor& p : l2->parameters()) params.push_back(p);
  nn::AdamW opt(params, 0.03, 0.0);
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    const Tensor err = l2->forward(cube(l1->forward(x))) - target;
    Tensor loss = mean(err * err);
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  std::printf("     training with cube: loss %.3g -> %.3g\n", first, last);
  check(std::isfinite(last) && last < first / 100, "cube: a tiny model using it trains (loss falls 100x)");
}

// HKT_NUM_THREADS is read by a static initialiser: it must also work when a
// static libhkt.a is linked (tools/test.sh runs this with HKT_NUM_THREADS=1).
void threads_from_env() {
  if (const char* env = std::getenv("HKT_NUM_THREADS"))
    check(hkt::get_num_threads() == std::atoi(env), "HKT_NUM_THREADS sets the number of threads");
}

void version() {
  check(std::string(HKT_VERSION_STRING) == hkt::version(), "version: hkt/version.hpp matches the library");
  check(std::string(HKT_VERSION_STRING) == HKT_PACKAGE_VERSION, "version: hkt/version.hpp matches the package");
  check(HKT_VERSION == HKT_VERSION_MAJOR * 10000 + HKT_VERSION_MINOR * 100 + HKT_VERSION_PATCH, "version: HKT_VERSION");
}

}  // namespace

// The CUDA API is in every build (without CUDA or a GPU: nothing available;
// no switch names a lab kernel).
void cuda_api() {
  using namespace hkt;
  check(cuda_device_count() >= 0 && cuda_is_available() == (cuda_device_count() > 0), "cuda: device count");
  bool ok = true;
  try {
    ok = cuda_attention_kernel_knobs().empty();
  } catch (const Error& e) {
    std::printf("     %s\n", e.what());
    ok = false;
  }
  check(ok, "cuda: no attention kernel switch set");
}

int main() {
  try {
    version();
    cuda_api();
    threads_from_env();
    builtin_ops();
    custom_op();
    swish_op();
    harness_op();
    train_with_custom_op();
  } catch (const std::exception& e) {
    std::printf("FAIL uncaught exception: %s\n", e.what());
    return 1;
  }
  if (g_failures) {
    std::printf("hkt-consumer: %d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("hkt-consumer: all checks passed\n");
  return 0;
}
