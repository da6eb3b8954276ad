// hkt-bench-blas-bits: how OpenBLAS's single-precision products change their last bits,
// printed as a markdown table (docs/design.md, "Determinism").
//
// For the matrix products of a long-ListOps training step (B = 32, T = 512, D = 128,
// 4 heads of 32, FFN 512, 10 classes), on seeded random inputs, it counts the output
// elements whose bits differ between
//   repeat   the same call twice at N OpenBLAS threads (must be 0: a run's bits are
//            repeatable at a fixed thread count);
//   1 vs N   the whole call at 1 and at N OpenBLAS threads;
//   tiles    the whole call at 1 thread and the same product computed as fixed tiles of
//            the output (--tile-m x --tile-n), each a call of its own at 1 thread: the
//            split a thread-count-independent scheme would use.
// and the largest difference of each relative to the largest output element.
//
//   hkt-bench-blas-bits [--threads N] [--tile-m M] [--tile-n N] [--check]
//     --threads N   OpenBLAS threads of the second call (default 2)
//     --tile-m/-n   the fixed tile of the third column (default 256 x 64)
//     --check       exit 1 when the repeat column is not 0 everywhere
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Product {
  const char* what;
  bool ta, tb;
  int m, n, k;
};

// The products of one training step of a long-ListOps model (row-major, as the library calls them).
const Product kProducts[] = {
    {"projection X W (B T x D x D)", false, false, 16384, 128, 128},
    {"its input grad dY W^T", false, true, 16384, 128, 128},
    {"its weight grad X^T dY", true, false, 128, 128, 16384},
    {"FFN up X W1 (B T x 4D x D)", false, false, 16384, 512, 128},
    {"FFN down weight grad H^T dY", true, false, 512, 128, 16384},
    {"scores Q K^T (one head)", false, true, 512, 512, 32},
    {"P V (one head)", false, false, 512, 32, 512},
    {"dK = dS^T Q (one head)", true, false, 512, 32, 512},
    {"classifier (B x 10 x D)", false, false, 32, 10, 128},
};

struct Diff {
  long count = 0;
  double max_rel = 0;
};

// Elements whose bits differ, and the largest difference relative to the largest |x| (a
// normwise measure: an output that cancels to near zero does not inflate it).
Diff compare(const std::vector<float>& x, const std::vector<float>& y) {
  Diff d;
  double max_abs = 1e-30, max_diff = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(double(x[i])));
    if (std::memcmp(&x[i], &y[i], sizeof(float)) == 0) continue;
    ++d.count;
    max_diff = std::max(max_diff, std::fabs(double(x[i]) - double(y[i])));
  }
  d.max_rel = max_diff / max_abs;
  return d;
}

// C (m x n, ldc n) = op(A) op(B) over rows [i0, i0 + mm) and columns [j0, j0 + nn) of C.
void sgemm_block(const Product& p, const float* a, const float* b, float* c, int i0, int mm, int j0, int nn) {
  const int lda = p.ta ? p.m : p.k, ldb = p.tb ? p.k : p.n;
  const float* ap = p.ta ? a + i0 : a + static_cast<long>(i0) * lda;
  const float* bp = p.tb ? b + static_cast<long>(j0) * ldb : b + j0;
  cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans, mm, nn, p.k, 1.0f,
              ap, lda, bp, ldb, 0.0f, c + static_cast<long>(i0) * p.n + j0, p.n);
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "hkt-bench-blas-bits: %s\nusage: hkt-bench-blas-bits [--threads N] [--tile-m M] [--tile-n N] "
               "[--check]\n",
               why.c_str());
  std::exit(2);
}

int positive(int argc, char** argv, int& i) {
  const std::string opt = argv[i];
  if (i + 1 >= argc) usage(opt + " needs a value");
  char* end = nullptr;
  const long v = std::strtol(argv[++i], &end, 10);
  if (*argv[i] == '\0' || *end != '\0' || v < 1 || v > 4096)
    usage(opt + " must be an integer in [1, 4096], got '" + argv[i] + "'");
  return static_cast<int>(v);
}

std::string cell(const Diff& d, long total) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%ld (%.1f%%) | %.1e", d.count, 100.0 * d.count / total, d.max_rel);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, tile_m = 256, tile_n = 64;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") threads = positive(argc, argv, i);
    else if (a == "--tile-m") tile_m = positive(argc, argv, i);
    else if (a == "--tile-n") tile_n = positive(argc, argv, i);
    else if (a == "--check") check = true;
    else usage("unknown option '" + a + "'");
  }
  std::printf("%s; N = %d threads; tiles %d x %d\n\n", openblas_get_config(), threads, tile_m, tile_n);
  std::printf("| product | m x n x k | repeat at N: differ | max diff | 1 vs N: differ | max diff | tiles vs whole: "
              "differ | max diff |\n|---|---|--:|--:|--:|--:|--:|--:|\n");
  std::mt19937 gen(12345);
  std::uniform_real_distribution<float> unif(-1.0f, 1.0f);
  bool repeat_ok = true;
  for (const Product& p : kProducts) {
    std::vector<float> a(static_cast<size_t>(p.m) * p.k), b(static_cast<size_t>(p.k) * p.n);
    for (float& v : a) v = unif(gen);
    for (float& v : b) v = unif(gen);
    const size_t total = static_cast<size_t>(p.m) * p.n;
    std::vector<float> one(total), many(total), again(total), tiled(total);
    openblas_set_num_threads(1);
    sgemm_block(p, a.data(), b.data(), one.data(), 0, p.m, 0, p.n);
    for (int i0 = 0; i0 < p.m; i0 += tile_m)
      for (int j0 = 0; j0 < p.n; j0 += tile_n)
        sgemm_block(p, a.data(), b.data(), tiled.data(), i0, std::min(tile_m, p.m - i0), j0,
                    std::min(tile_n, p.n - j0));
    openblas_set_num_threads(threads);
    sgemm_block(p, a.data(), b.data(), many.data(), 0, p.m, 0, p.n);
    sgemm_block(p, a.data(), b.data(), again.data(), 0, p.m, 0, p.n);
    const Diff rep = compare(many, again);
    repeat_ok = repeat_ok && rep.count == 0;
    std::printf("| %s | %d x %d x %d | %s | %s | %s |\n", p.what, p.m, p.n, p.k, cell(rep, total).c_str(),
                cell(compare(one, many), total).c_str(), cell(compare(one, tiled), total).c_str());
  }
  if (check && !repeat_ok) {
    std::fprintf(stderr, "hkt-bench-blas-bits: a product differs between two calls at %d threads\n", threads);
    return 1;
  }
  return 0;
}
