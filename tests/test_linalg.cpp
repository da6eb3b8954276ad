#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/gradcheck.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/ops/view.hpp"
#include "helpers/check.hpp"

using namespace hkt;
using hkt::test::error_of;

namespace {

using V = std::vector<double>;

// Naive reference product of 2-D float64 tensors (any strides).
V ref_matmul(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const V av = a.to_vector<double>(), bv = b.to_vector<double>();
  V c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += av[i * k + p] * bv[p * n + j];
      c[i * n + j] = s;
    }
  return c;
}

double max_abs_diff(const V& x, const V& y) {
  REQUIRE(x.size() == y.size());
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

Tensor rnd(const Shape& s, bool grad = true) {
  Tensor t = randn(s, {DType::Float64});
  if (grad) t.set_requires_grad(true);
  return t;
}

// A non-contiguous leaf holding the transpose of a fresh [cols, rows] tensor: shape [rows, cols], strides (1, rows).
Tensor rnd_t(int64_t rows, int64_t cols) {
  return transpose(randn({cols, rows}, {DType::Float64}), 0, 1).detach().set_requires_grad(true);
}

Tensor mm_fn(const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }

}  // namespace

TEST_CASE("matmul: hand-computed values") {
  const Tensor a = from_vector(V{1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = from_vector(V{7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor y = matmul(a, b);
  CHECK(y.shape() == Shape{2, 2});
  CHECK(y.to_vector<double>() == V{58, 64, 139, 154});

  // float32 too
  Tensor yf = matmul(to_dtype(a, DType::Float32), to_dtype(b, DType::Float32));
  CHECK(yf.dtype() == DType::Float32);
  CHECK(yf.to_vector<float>() == std::vector<float>{58, 64, 139, 154});

  // 1-D operands: [K] @ [K, N] -> [N]; [M, K] @ [K] -> [M]; [K] @ [K] -> []
  const Tensor v = from_vector(V{1, 2, 3}, {3});
  Tensor vy = matmul(v, b);
  CHECK(vy.shape() == Shape{2});
  CHECK(vy.to_vector<double>() == V{58, 64});
  Tensor av = matmul(a, from_vector(V{1, 1, 1}, {3}));
  CHECK(av.shape() == Shape{2});
  CHECK(av.to_vector<double>() == V{6, 15});
  Tensor dot = matmul(v, from_vector(V{4, 5, 6}, {3}));
  CHECK(dot.dim() == 0);
  CHECK(dot.item<double>() == 32.0);

  // transposed operand: a^T [3, 2] @ [[1, 0], [0, 1]] = a^T
  Tensor at = matmul(transpose(a, 0, 1), from_vector(V{1, 0, 0, 1}, {2, 2}));
  CHECK(at.to_vector<double>() == V{1, 4, 2, 5, 3, 6});

  // batched: [2, 2, 2] @ [2, 2, 1]
  const Tensor ba = from_vector(V{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  const Tensor bb = from_vector(V{1, 1, 2, -1}, {2, 2, 1});
  Tensor by = bmm(ba, bb);
  CHECK(by.shape() == Shape{2, 2, 1});
  CHECK(by.to_vector<double>() == V{3, 7, 4, 6});

  // 1-D with a batched operand: [K] @ [B, K, N] -> [B, N]; [B, M, K] @ [K] -> [B, M]
  CHECK(matmul(from_vector(V{1, 1}, {2}), ba).shape() == Shape{2, 2});
  CHECK(matmul(from_vector(V{1, 1}, {2}), ba).to_vector<double>() == V{4, 6, 12, 14});
  CHECK(matmul(ba, from_vector(V{1, -1}, {2})).to_vector<double>() == V{-1, -1, -1, -1});
}

TEST_CASE("matmul: batched and broadcast values match per-entry 2-D products") {
  manual_seed(7);
  const Tensor a = randn({2, 1, 3, 4}, {DType::Float64});
  const Tensor b = randn({5, 4, 2}, {DType::Float64});
  const Tensor y = matmul(a, b);
  REQUIRE(y.shape() == Shape{2, 5, 3, 2});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j)
      CHECK(max_abs_diff(select(select(y, 0, i), 0, j).to_vector<double>(),
                         ref_matmul(select(select(a, 0, i), 0, 0), select(b, 0, j))) < 1e-12);

  // [B, M, K] @ [K, N]: the batch is folded into one product
  const Tensor a3 = randn({4, 3, 5}, {DType::Float64}), w = randn({5, 2}, {DType::Float64});
  const Tensor y3 = matmul(a3, w);
  REQUIRE(y3.shape() == Shape{4, 3, 2});
  for (int64_t i = 0; i < 4; ++i)
    CHECK(max_abs_diff(select(y3, 0, i).to_vector<double>(), ref_matmul(select(a3, 0, i), w)) < 1e-12);

  // [K, N] on the left of a batch, and an expanded (stride-0) batch operand
  const Tensor l = randn({3, 5}, {DType::Float64}), r = randn({4, 5, 2}, {DType::Float64});
  const Tensor yl = matmul(l, r);
  for (int64_t i = 0; i < 4; ++i)
    CHECK(max_abs_diff(select(yl, 0, i).to_vector<double>(), ref_matmul(l, select(r, 0, i))) < 1e-12);
  const Tensor ye = matmul(expand(l, {4, 3, 5}), r);
  CHECK(max_abs_diff(ye.to_vector<double>(), yl.to_vector<double>()) < 1e-12);
}

TEST_CASE("matmul: transposed and strided operands equal their contiguous copies") {
  manual_seed(11);
  const Tensor x = randn({7, 5}, {DType::Float64}), z = randn({3, 7}, {DType::Float64});
  const Tensor xt = transpose(x, 0, 1);  // [5, 7], strides (1, 5)
  const Tensor zt = transpose(z, 0, 1);  // [7, 3], strides (1, 7)
  REQUIRE(!xt.is_contiguous());
  const V ref = matmul(contiguous(xt), contiguous(zt)).to_vector<double>();
  CHECK(max_abs_diff(matmul(xt, zt).to_vector<double>(), ref) < 1e-12);
  CHECK(max_abs_diff(matmul(contiguous(xt), zt).to_vector<double>(), ref) < 1e-12);
  CHECK(max_abs_diff(matmul(xt, contiguous(zt)).to_vector<double>(), ref) < 1e-12);
  CHECK(max_abs_diff(matmul(xt, zt).to_vector<double>(), ref_matmul(xt, zt)) < 1e-12);

  // a row block of a wider matrix (row stride > cols) and a column-strided view (copied)
  const Tensor wide = randn({6, 10}, {DType::Float64});
  const Tensor block = slice(wide, 1, 2, 9);         // [6, 7], strides (10, 1)
  const Tensor every2 = slice(wide, 1, 0, 10, 2);    // [6, 5], strides (10, 2): not BLAS-expressible
  CHECK(max_abs_diff(matmul(block, x).to_vector<double>(), ref_matmul(block, x)) < 1e-12);
  CHECK(max_abs_diff(matmul(every2, xt).to_vector<double>(), ref_matmul(every2, xt)) < 1e-12);

  // batched transpose views
  const Tensor p = randn({3, 4, 5}, {DType::Float64}), q = randn({3, 6, 5}, {DType::Float64});
  const Tensor pq = matmul(p, transpose(q, 1, 2));
  CHECK(max_abs_diff(pq.to_vector<double>(), matmul(p, contiguous(transpose(q, 1, 2))).to_vector<double>()) <
        1e-12);
  const Tensor tp = matmul(transpose(p, 1, 2), p);  // [3, 5, 5]
  for (int64_t i = 0; i < 3; ++i)
    CHECK(max_abs_diff(select(tp, 0, i).to_vector<double>(),
                       ref_matmul(transpose(select(p, 0, i), 0, 1), select(p, 0, i))) < 1e-12);
}

TEST_CASE("matmul: float32 agrees with float64 on a random 64x48x33 product") {
  manual_seed(3);
  const Tensor a = randn({64, 48}, {DType::Float64}), b = randn({48, 33}, {DType::Float64});
  const V y64 = matmul(a, b).to_vector<double>();
  const Tensor y32 = matmul(to_dtype(a, DType::Float32), to_dtype(b, DType::Float32));
  CHECK(y32.dtype() == DType::Float32);
  CHECK(max_abs_diff(to_dtype(y32, DType::Float64).to_vector<double>(), y64) < 1e-4);
  CHECK(max_abs_diff(y64, ref_matmul(a, b)) < 1e-10);
}

TEST_CASE("matmul: K = 0 gives zeros, empty dims give empty results") {
  const Tensor y = matmul(zeros({3, 0}, {DType::Float32}), zeros({0, 4}, {DType::Float32}));
  CHECK(y.shape() == Shape{3, 4});
  CHECK(y.to_vector<float>() == std::vector<float>(12, 0.0f));
  CHECK(matmul(zeros({2, 0, 3}, {DType::Float64}), zeros({3, 4}, {DType::Float64})).shape() == Shape{2, 0, 4});
  CHECK(matmul(zeros({0, 2, 3}, {DType::Float64}), zeros({3, 4}, {DType::Float64})).shape() == Shape{0, 2, 4});
}

TEST_CASE("matmul: gradcheck (float64)") {
  manual_seed(5);
  SUBCASE("2-D") { gradcheck(mm_fn, {rnd({3, 4}), rnd({4, 2})}); }
  SUBCASE("odd sizes 7x5 @ 5x3") { gradcheck(mm_fn, {rnd({7, 5}), rnd({5, 3})}); }
  SUBCASE("1-D x 2-D") { gradcheck(mm_fn, {rnd({4}), rnd({4, 3})}); }
  SUBCASE("2-D x 1-D") { gradcheck(mm_fn, {rnd({3, 4}), rnd({4})}); }
  SUBCASE("1-D x 1-D") { gradcheck(mm_fn, {rnd({5}), rnd({5})}); }
  SUBCASE("batched 3-D") { gradcheck(mm_fn, {rnd({2, 3, 4}), rnd({2, 4, 5})}); }
  SUBCASE("bmm") { gradcheck([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                             {rnd({3, 2, 4}), rnd({3, 4, 2})}); }
  SUBCASE("broadcast batch [2,1,3,4] @ [5,4,2]") { gradcheck(mm_fn, {rnd({2, 1, 3, 4}), rnd({5, 4, 2})}); }
  SUBCASE("3-D @ 2-D (shared weight)") { gradcheck(mm_fn, {rnd({4, 3, 5}), rnd({5, 2})}); }
  SUBCASE("3-D @ transposed 2-D (a Linear layer's weight^T)") {
    const Tensor wt = rnd_t(5, 2);
    REQUIRE(!wt.is_contiguous());
    gradcheck(mm_fn, {rnd({4, 3, 5}), wt});
  }
  SUBCASE("2-D @ 3-D") { gradcheck(mm_fn, {rnd({3, 5}), rnd({4, 5, 2})}); }
  SUBCASE("transposed (non-contiguous) operands") {
    const Tensor a = rnd_t(5, 4), b = rnd_t(4, 3);
    REQUIRE(!a.is_contiguous());
    REQUIRE(!b.is_contiguous());
    gradcheck(mm_fn, {a, b});
    gradcheck(mm_fn, {a, rnd({4, 6})});
    gradcheck(mm_fn, {rnd({2, 5}), a});
  }
  SUBCASE("batched transposed operands") {
    const Tensor a = transpose(randn({2, 4, 3}, {DType::Float64}), 1, 2).detach().set_requires_grad(true);
    gradcheck(mm_fn, {a, rnd({2, 4, 3})});
    gradcheck(mm_fn, {rnd({2, 4, 3}).detach().set_requires_grad(true), a});
  }
  SUBCASE("composite: gelu(x @ w1) @ w2") {
    gradcheck([](const std::vector<Tensor>& in) { return matmul(tanh(matmul(in[0], in[1])), in[2]); },
              {rnd({4, 3}), rnd({3, 6}), rnd({6, 2})});
  }
}

TEST_CASE("matmul: only the inputs that need a gradient receive one") {
  Tensor a = rnd({3, 4});
  const Tensor b = rnd({4, 2}, false);
  sum(matmul(a, b)).backward();
  CHECK(a.grad().defined());
  CHECK(a.grad().shape() == Shape{3, 4});
  CHECK(!b.grad().defined());
  // dA of sum(A @ B) is row sums of B broadcast over rows
  const V bv = b.to_vector<double>(), ga = a.grad().to_vector<double>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 4; ++k) CHECK(ga[i * 4 + k] == doctest::Approx(bv[k * 2] + bv[k * 2 + 1]));
}

TEST_CASE("matmul: errors") {
  const Tensor a = zeros({2, 3}, {DType::Float64}), b = zeros({4, 5}, {DType::Float64});
  std::string e = error_of([&] { matmul(a, b); });
  CHECK(e.find("matmul") != std::string::npos);
  CHECK(e.find("[2, 3]") != std::string::npos);
  CHECK(e.find("[4, 5]") != std::string::npos);
  CHECK(error_of([&] { matmul(zeros({3}, {DType::Float64}), b); }).find("[4, 5]") != std::string::npos);
  CHECK(error_of([&] { matmul(zeros({2, 3}, {DType::Float32}), zeros({3, 2}, {DType::Float64})); })
            .find("dtype") != std::string::npos);
  CHECK(error_of([&] { matmul(scalar_tensor(1.0, DType::Float64), a); }).find("at least 1 dim") !=
        std::string::npos);
  CHECK(error_of([&] { matmul(a, scalar_tensor(1.0, DType::Float64)); }).find("at least 1 dim") !=
        std::string::npos);
  CHECK(error_of([&] { matmul(zeros({2, 2, 3}, {DType::Float64}), zeros({3, 3, 4}, {DType::Float64})); })
            .find("broadcast") != std::string::npos);
  CHECK(error_of([&] { matmul(zeros({2, 3}, {DType::Int64}), zeros({3, 2}, {DType::Int64})); })
            .find("float") != std::string::npos);
  CHECK(error_of([&] { bmm(a, a); }).find("bmm") != std::string::npos);
  CHECK(error_of([&] { bmm(zeros({2, 2, 3}, {DType::Float64}), zeros({3, 3, 2}, {DType::Float64})); })
            .find("batch") != std::string::npos);
  CHECK_THROWS_AS(matmul(Tensor(), a), Error);
}

// OpenBLAS's idle spin (kernels/cpu/gemm.cpp): before the first product with two or more
// OpenBLAS threads the library sets OPENBLAS_THREAD_TIMEOUT to 16 unless the user set it, and
// OpenBLAS re-reads it. CTest runs this case alone in fresh processes (tests/CMakeLists.txt,
// blas_spin_*) with HKT_TEST_EXPECT_SPIN the value expected after the product ("unset": none);
// in the whole suite, where an earlier case made the first product, the setting must hold too.
extern "C" int openblas_thread_timeout(void) __attribute__((weak));
TEST_CASE("matmul: OpenBLAS's idle spin is shortened unless the user set it") {
  const char* user = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  const std::string before = user ? user : "";
  const Tensor c = matmul(randn({64, 32}), randn({32, 48}));
  CHECK(c.size(0) == 64);
  const char* now = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  const std::string after = now ? now : "unset";
  if (const char* want = std::getenv("HKT_TEST_EXPECT_SPIN")) {
    // (a one-core machine runs one OpenBLAS thread whatever OPENBLAS_NUM_THREADS says: no pool)
    CHECK(after == (before.empty() && get_blas_num_threads() <= 1 ? std::string("unset") : std::string(want)));
  } else if (get_blas_num_threads() > 1) {
    CHECK(after != "unset");
  }
  if (!before.empty()) CHECK(after == before);  // the user's value is kept
  if (after == "16" && openblas_thread_timeout) CHECK(openblas_thread_timeout() == 16);  // OpenBLAS read it
}
