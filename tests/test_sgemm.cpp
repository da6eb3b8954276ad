// float32 matrix products (kernels/cpu/sgemm_avx512.cpp, kernels/cpu/gemm.cpp): exact bits of the
// library's own AVX-512 kernel, their independence from thread counts and row blocks, and
// agreement with float64 whichever code runs them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hkt/core/random.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/ops/view.hpp"

using namespace hkt;

namespace {

struct Case {
  int64_t m, n, k;
};
// Edges of every blocking: 8-row tiles, 32-column panels, 64-row tasks, 256-long k blocks, few
// row blocks (columns split, B packed 2,048 rows of k at a time), one row, one column, k = 1.
const Case kCases[] = {{1, 1, 1},    {7, 33, 5},    {8, 32, 256},  {9, 31, 257}, {65, 97, 300},
                       {130, 40, 513}, {200, 150, 64}, {3, 300, 1000}, {513, 1, 17},  {1, 65, 700}, {40, 70, 4500}};

// op(A) [m, k] and op(B) [k, n] as float32 tensors, stored transposed when ta / tb (a transposed
// view reaches the product as a flag, not a copy).
Tensor operand(int64_t r, int64_t c, bool t) { return t ? transpose(randn({c, r}), 0, 1) : randn({r, c}); }

// The reference: every output one fused multiply-add chain over k in order, from 0.
std::vector<float> fma_chain(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<float> av = contiguous(a).to_vector<float>(), bv = contiguous(b).to_vector<float>();
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) acc = std::fma(av[static_cast<size_t>(i * k + p)], bv[static_cast<size_t>(p * n + j)], acc);
      c[static_cast<size_t>(i * n + j)] = acc;
    }
  return c;
}

// f(a, b, s) for every case and every storage of the two operands.
template <class F>
void for_each_product(F&& f) {
  for (const Case& s : kCases)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      INFO("m ", s.m, " n ", s.n, " k ", s.k, " ta ", ta, " tb ", tb);
      const Tensor a = operand(s.m, s.k, ta), b = operand(s.k, s.n, tb);
      f(a, b, s);
    }
}

// Whether the library's own kernel runs float32 products here; if not, says why nothing is checked.
bool own_kernel(const char* why) {
  if (get_sgemm_backend() == "hkt") return true;
  MESSAGE("float32 products run in BLAS on this machine (no AVX-512F, or HKT_SGEMM=blas): ", why);
  return false;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("sgemm: the library's kernel gives every output as one FMA chain over k, bit for bit") {
  if (!own_kernel("nothing to check")) return;
  manual_seed(11);
  for_each_product([](const Tensor& a, const Tensor& b, const Case&) {
    CHECK(same_bits(matmul(a, b).to_vector<float>(), fma_chain(a, b)));
  });
}

TEST_CASE("sgemm: operands with leading dimensions wider than their rows, bit for bit") {
  if (!own_kernel("nothing to check")) return;
  manual_seed(14);
  for (const Case& s : {Case{37, 45, 300}, Case{130, 70, 90}}) {
    // column blocks of wider matrices: rows lda = k + 7 and ldb = n + 5 apart (or their transposes)
    const Tensor a = narrow(randn({s.m, s.k + 7}), 1, 3, s.k), b = narrow(randn({s.k, s.n + 5}), 1, 2, s.n);
    const Tensor at = transpose(narrow(randn({s.k, s.m + 9}), 1, 4, s.m), 0, 1);
    CHECK(same_bits(matmul(a, b).to_vector<float>(), fma_chain(a, b)));
    CHECK(same_bits(matmul(at, b).to_vector<float>(), fma_chain(at, b)));
  }
}

TEST_CASE("sgemm: the same bits at 1, 2 and 3 threads and for any block of rows") {
  if (!own_kernel("its bits depend on its thread count (docs/design.md)")) return;
  manual_seed(12);
  const int before = get_num_threads();
  for (const Case& s : {Case{300, 200, 600}, Case{128, 128, 4200}, Case{1000, 96, 64}}) {
    const Tensor a = operand(s.m, s.k, false), b = operand(s.k, s.n, true);
    set_num_threads(1);
    const std::vector<float> one = matmul(a, b).to_vector<float>();
    for (int th : {2, 3}) {
      set_num_threads(th);
      CHECK(same_bits(matmul(a, b).to_vector<float>(), one));
    }
    // rows [r0, r0 + len) alone: the rows of the whole product
    const int64_t r0 = s.m / 3, len = s.m / 2;
    const std::vector<float> part = matmul(narrow(a, 0, r0, len), b).to_vector<float>();
    CHECK(same_bits(part, std::vector<float>(one.begin() + r0 * s.n, one.begin() + (r0 + len) * s.n)));
  }
  set_num_threads(before);
}

TEST_CASE("sgemm: float32 products agree with float64 within rounding, whichever code runs them") {
  manual_seed(13);
  for_each_product([](const Tensor& a, const Tensor& b, const Case& s) {
    const std::vector<float> c = matmul(a, b).to_vector<float>();
    const std::vector<float> ad = contiguous(a).to_vector<float>(), bd = contiguous(b).to_vector<float>();
    double worst = 0;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          const double x = double(ad[static_cast<size_t>(i * s.k + p)]) * double(bd[static_cast<size_t>(p * s.n + j)]);
          ref += x, mag += std::fabs(x);
        }
        worst = std::max(worst, std::fabs(c[static_cast<size_t>(i * s.n + j)] - ref) / (mag + 1e-30));
      }
    CHECK(worst < 1e-6 * std::sqrt(static_cast<double>(s.k)) + 1e-7);
  });
}

TEST_CASE("sgemm: HKT_SGEMM=blas sends float32 products to BLAS") {
  const char* e = std::getenv("HKT_SGEMM");
  if (e && std::string(e) == "blas") CHECK(get_sgemm_backend() == "blas");
  if (const char* want = std::getenv("HKT_TEST_EXPECT_SGEMM")) CHECK(get_sgemm_backend() == std::string(want));
}
