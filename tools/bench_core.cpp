// hkt-bench-core: throughput of core ops, printed as a markdown table.
//
//   matmul (float32, square N = 256..2048): hkt::matmul next to a direct
//     cblas_sgemm on the same buffers, in the same run, with their ratio;
//   add (float32, 2^24 and 2^20 elements):  GB/s with bytes = 3 * 4 * n;
//   softmax over rows (float32, 4096 x 4096): GB/s with bytes = 2 * 4 * n;
//   both next to a plain TBB loop writing into a preallocated buffer.
//
// Each measurement: a warm-up, then hkt and reference calls alternate, each
// timed on its own, for a fixed time budget; the best call of each is reported
// (robust to other load on the machine).
//
//   hkt-bench-core [--quick] [--check]
//     --quick  a short time budget per measurement (smoke test)
//     --check  exit 1 if hkt::matmul is more than 5% below cblas_sgemm at N >= 1024
#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "hkt/core/random.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/nn.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_of(const auto& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Pair {
  double hkt;  // best seconds per call
  double ref;
};

// Best time per call of f and g. After a warm-up, calls alternate f, g, f, g,
// ... and each is timed on its own, for about `budget_s` in all (at least
// `min_pairs` pairs): the minimum filters out calls slowed down by other load
// on the machine, and alternation gives both the same machine state.
template <class F, class G>
Pair best_pair(F&& f, G&& g, int min_pairs, double budget_s) {
  f();
  g();
  const double once = std::max(seconds_of(f) + seconds_of(g), 1e-7);
  const int pairs = std::max(min_pairs, static_cast<int>(budget_s / once));
  Pair best{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int r = 0; r < pairs; ++r) {
    best.hkt = std::min(best.hkt, seconds_of(f));
    best.ref = std::min(best.ref, seconds_of(g));
  }
  return best;
}

// Keeps results alive so the work is not optimised away.
volatile float g_sink = 0;

}  // namespace

int main(int argc, char** argv) {
  using namespace hkt;
  bool quick = false, check = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--check") == 0) check = true;
    else {
      const bool help = std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0;
      std::fprintf(help ? stdout : stderr,
                   "usage: %s [--quick] [--check]\n  --quick  a short time budget per measurement (smoke test)\n"
                   "  --check  exit 1 if hkt::matmul is more than 5%% below cblas_sgemm at N >= 1024\n",
                   argv[0]);
      return help ? 0 : 2;
    }
  }
  const int min_pairs = quick ? 3 : 10;
  const double budget_s = quick ? 0.3 : 3.0;
  manual_seed(1);

  std::printf("## hkt core benchmark: %d threads (TBB), %d OpenBLAS threads, best single call of >= %d "
              "alternating pairs\n\n",
              tbb::info::default_concurrency(), openblas_get_num_threads(), min_pairs);
  std::printf("| op | size | hkt | reference | reference is | hkt / reference |\n");
  std::printf("|----|------|----:|----------:|--------------|----------------:|\n");

  bool matmul_ok = true;
  for (const int64_t n : {256, 512, 1024, 2048}) {
    const Tensor a = randn({n, n}), b = randn({n, n});
    Tensor c = empty({n, n});
    const float *ap = a.data<float>(), *bp = b.data<float>();
    float* cp = c.data<float>();
    const int bn = static_cast<int>(n);
    const Pair t = best_pair(
        [&] {
          const Tensor y = matmul(a, b);
          g_sink = y.data<float>()[0];
        },
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, ap, bn, bp, bn, 0.0f, cp, bn);
          g_sink = cp[0];
        },
        min_pairs, budget_s);
    const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    const double ratio = t.ref / t.hkt;  // = hkt GFLOP/s / reference GFLOP/s
    if (n >= 1024 && ratio < 0.95) matmul_ok = false;
    std::printf("| matmul f32 | %lldx%lldx%lld | %.1f GFLOP/s | %.1f GFLOP/s | cblas_sgemm | %.3f |\n",
                static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n),
                flop / t.hkt * 1e-9, flop / t.ref * 1e-9, ratio);
    std::fflush(stdout);
  }

  // elementwise add: read a, b, write out. 2^24 floats (64 MB a tensor: every
  // output is a fresh allocation, so first-touch page faults are included) and
  // 2^20 floats (the allocator reuses the freed output).
  for (const int log2n : {24, 20}) {
    const int64_t n = int64_t{1} << log2n;
    const Tensor a = randn({n}), b = randn({n});
    Tensor out = empty({n});
    const float *ap = a.data<float>(), *bp = b.data<float>();
    float* op = out.data<float>();
    const Pair t = best_pair(
        [&] {
          const Tensor y = add(a, b);
          g_sink = y.data<float>()[n - 1];
        },
        [&] {
          tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 16), [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t i = r.begin(); i < r.end(); ++i) op[i] = ap[i] + bp[i];
          });
          g_sink = op[n - 1];
        },
        min_pairs, budget_s);
    const double bytes = 3.0 * 4.0 * static_cast<double>(n);
    std::printf("| add f32 | 2^%d | %.1f GB/s | %.1f GB/s | TBB loop, preallocated out | %.3f |\n", log2n,
                bytes / t.hkt * 1e-9, bytes / t.ref * 1e-9, t.ref / t.hkt);
    std::fflush(stdout);
  }

  {  // softmax over the rows of a 4096 x 4096 float32 matrix: read x, write y
    const int64_t rows = 4096, cols = 4096, n = rows * cols;
    const Tensor x = randn({rows, cols});
    Tensor out = empty({rows, cols});
    const float* xp = x.data<float>();
    float* op = out.data<float>();
    const Pair t = best_pair(
        [&] {
          const Tensor y = softmax(x, -1);
          g_sink = y.data<float>()[n - 1];
        },
        [&] {
          tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, 16), [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t i = r.begin(); i < r.end(); ++i) {
              const float* xr = xp + i * cols;
              float* yr = op + i * cols;
              float m = -std::numeric_limits<float>::infinity();
              for (int64_t j = 0; j < cols; ++j) m = std::max(m, xr[j]);
              float s = 0;
              for (int64_t j = 0; j < cols; ++j) s += (yr[j] = std::exp(xr[j] - m));
              const float inv = 1.0f / s;
              for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
            }
          });
          g_sink = op[n - 1];
        },
        min_pairs, budget_s);
    const double bytes = 2.0 * 4.0 * static_cast<double>(n);
    std::printf("| softmax f32 (rows) | 4096x4096 | %.1f GB/s | %.1f GB/s | TBB loop, preallocated out | %.3f |\n",
                bytes / t.hkt * 1e-9, bytes / t.ref * 1e-9, t.ref / t.hkt);
  }

  std::printf("\nmatmul within 5%% of cblas_sgemm at N >= 1024: %s\n", matmul_ok ? "yes" : "NO");
  return check && !matmul_ok ? 1 : 0;
}
