// GEMM lab (not part of the library; tools/gemm-lab/README.md): the model's matrix products with
// an 8-row x 32-column AVX-512 register tile (the fused attention's tile product widened to
// 512-bit registers; every output a sequential FMA chain over k) against OpenBLAS's cblas_sgemm,
// at one thread, on the shapes of hkt-small / mha-small at T x B = 512 x 32.
//
//   g++ -O3 -std=c++20 tools/gemm-lab/gemm_lab.cpp -lopenblas -o /tmp/gemm-lab
//   OPENBLAS_NUM_THREADS=1 /tmp/gemm-lab [MB KB PACK_A]     (row block, k block, 1: pack A; 48 128 1)
//
// C[M][N] = A[M][K] B[K][N] with A row-major (TA: A stored [K][M]) and B stored [N][K] (TB, a
// linear layer's weight) or [K][N].
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kR = 8, kC = 32;  // register tile: kR rows x 32 columns (two 512-bit registers a row)

// B packed into panels of 16 columns: panel p is [K][16] contiguous (zero padded past N).
__attribute__((target("avx2,fma"))) void pack_b(const float* b, bool tb, int64_t K, int64_t N, int64_t ldb,
                                                float* out) {
  const int64_t np = (N + kC - 1) / kC;
  for (int64_t p = 0; p < np; ++p) {
    float* o = out + p * K * kC;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < kC; ++j) {
        const int64_t n = p * kC + j;
        o[k * kC + j] = n < N ? (tb ? b[n * ldb + k] : b[k * ldb + n]) : 0.0f;
      }
  }
}

// kR rows x 32 columns over k in [k0, k1): acc from c when k0 > 0 (AVX-512F: 2 kR accumulators).
template <bool TA>
__attribute__((target("avx2,fma,avx512f,avx512vl"))) inline void tile(const float* a, int64_t lda, const float* bp,
                                                                      float* c, int64_t ldc, int64_t k0,
                                                                      int64_t k1) {
  __m512 x[kR][2];
  for (int r = 0; r < kR; ++r) {
    x[r][0] = k0 ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    x[r][1] = k0 ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = k0; k < k1; ++k) {
    const __m512 b0 = _mm512_load_ps(bp + k * kC), b1 = _mm512_load_ps(bp + k * kC + 16);
#pragma GCC unroll 16
    for (int r = 0; r < kR; ++r) {
      const __m512 av = _mm512_set1_ps(TA ? a[k * lda + r] : a[r * lda + k]);
      x[r][0] = _mm512_fmadd_ps(av, b0, x[r][0]);
      x[r][1] = _mm512_fmadd_ps(av, b1, x[r][1]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    _mm512_storeu_ps(c + r * ldc, x[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, x[r][1]);
  }
}

// A rows [i0, i0 + mb) x k [k0, k1) packed into 8-row panels [k][8].
template <bool TA>
void pack_a(const float* a, int64_t lda, int64_t i0, int64_t mb, int64_t k0, int64_t k1, float* out) {
  const int64_t kn = k1 - k0;
  for (int64_t i = 0; i < mb; i += kR)
    for (int64_t k = k0; k < k1; ++k)
      for (int r = 0; r < kR; ++r)
        out[(i / kR) * kn * kR + (k - k0) * kR + r] = TA ? a[k * lda + i0 + i + r] : a[(i0 + i + r) * lda + k];
}

// M % 8 == 0, N % 32 == 0 (the lab's shapes). Rows in blocks of mb, k in blocks of kb.
template <bool TA>
void own_gemm(const float* a, int64_t lda, const float* b, bool tb, int64_t ldb, float* c, int64_t M, int64_t N,
              int64_t K, std::vector<float>& bp, int64_t mb, int64_t kb, bool packa, std::vector<float>& ap) {
  bp.resize(static_cast<size_t>(((N + kC - 1) / kC) * K * kC) + 32);
  float* bpa = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(bp.data()) + 63) & ~uintptr_t(63));
  pack_b(b, tb, K, N, ldb, bpa);
  for (int64_t k0 = 0; k0 < K; k0 += kb) {
    const int64_t k1 = std::min(K, k0 + kb);
    for (int64_t i0 = 0; i0 < M; i0 += mb) {
      if (packa) {
        ap.resize(static_cast<size_t>(mb * (k1 - k0)));
        pack_a<TA>(a, lda, i0, std::min(mb, M - i0), k0, k1, ap.data());
      }
      for (int64_t p = 0; p < N / kC; ++p)
        for (int64_t i = i0; i < std::min(M, i0 + mb); i += kR) {
          if (packa)
            tile<true>(ap.data() + ((i - i0) / kR) * (k1 - k0) * kR - k0 * kR, kR, bpa + p * K * kC, c + i * N + p * kC, N, k0, k1);
          else
            tile<TA>(TA ? a + i : a + i * lda, lda, bpa + p * K * kC, c + i * N + p * kC, N, k0, k1);
        }
    }
  }
}

template <class F>
double best_ms(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t MB = argc > 1 ? std::atoll(argv[1]) : 48, KB = argc > 2 ? std::atoll(argv[2]) : 128;
  const bool PA = argc <= 3 || argv[3][0] == '1';
  struct Shape { const char* what; int64_t M, N, K; bool ta, tb; };
  const Shape shapes[] = {
      {"x W^T, 128 -> 128 (q, k, v, out)", 16384, 128, 128, false, true},
      {"x W^T, 128 -> 512 (FFN up)", 16384, 512, 128, false, true},
      {"x W^T, 512 -> 128 (FFN down)", 16384, 128, 512, false, true},
      {"dY W, 128 -> 128 (dX)", 16384, 128, 128, false, false},
      {"dY W, 512 -> 128 (dX of FFN up)", 16384, 128, 512, false, false},
      {"dY^T X, 128 x 128 (dW)", 128, 128, 16384, true, false},
      {"dY^T X, 512 x 128 (dW of FFN up)", 512, 128, 16384, true, false},
  };
  std::printf("| product | M | N | K | OpenBLAS GFLOP/s | own GFLOP/s | own / OpenBLAS | max |diff| / max |c| |\n|---|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.M * s.K)), b(static_cast<size_t>(s.K * s.N)),
        c1(static_cast<size_t>(s.M * s.N)), c2(c1.size()), bp, ap;
    uint32_t st = 12345;
    auto rnd = [&] { st = st * 1664525u + 1013904223u; return static_cast<float>(st >> 8) / 16777216.0f - 0.5f; };
    for (float& x : a) x = rnd();
    for (float& x : b) x = rnd();
    const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
    auto blas = [&] {
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.M, s.N, s.K,
                  1.0f, a.data(), lda, b.data(), ldb, 0.0f, c1.data(), s.N);
    };
    auto own = [&] {
      if (s.ta) own_gemm<true>(a.data(), lda, b.data(), s.tb, ldb, c2.data(), s.M, s.N, s.K, bp, MB, KB, PA, ap);
      else own_gemm<false>(a.data(), lda, b.data(), s.tb, ldb, c2.data(), s.M, s.N, s.K, bp, MB, KB, PA, ap);
    };
    double tb_ = 1e30, to = 1e30;
    for (int round = 0; round < 5; ++round) {
      tb_ = std::min(tb_, best_ms(blas, 3));
      to = std::min(to, best_ms(own, 3));
    }
    double md = 0, mc = 0;
    for (size_t i = 0; i < c1.size(); ++i) md = std::max(md, double(std::fabs(c1[i] - c2[i]))), mc = std::max(mc, double(std::fabs(c1[i])));
    const double gf = 2.0 * s.M * s.N * s.K * 1e-6;
    std::printf("| %s | %lld | %lld | %lld | %.1f | %.1f | %.2f | %.1e |\n", s.what, (long long)s.M, (long long)s.N,
                (long long)s.K, gf / tb_, gf / to, tb_ / to, md / mc);
  }
}
