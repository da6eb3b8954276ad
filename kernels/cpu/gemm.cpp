// BLAS-backed matrix products (see gemm.hpp).
#include "kernels/cpu/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "hkt/core/error.hpp"
#include "kernels/backends.hpp"
#include "kernels/cpu/sgemm_avx512.hpp"

// OpenBLAS's own (pthreads build: re-reads the environment; stops its thread pool, which the
// next threaded product starts again). Weak: absent from other BLAS builds, then not called.
extern "C" {
void openblas_read_env(void) __attribute__((weak));
int blas_thread_shutdown_(void) __attribute__((weak));
}

namespace hkt::cpu {
namespace {

// OpenBLAS's idle pool threads spin (sched_yield in a loop) for 2^28 cycles, about 0.1 s, after
// each product before they sleep. A step calls a product every few milliseconds and runs
// oneTBB kernels on the same cores between them, so with 2 or more threads OpenBLAS's spinning
// threads never sleep and take time from oneTBB's (2 threads, T x B = 512 x 32 and 1024 x 8:
// a step 4-10% faster at 2^16; docs/performance.md). Unless the user set it, the spin is
// OPENBLAS_THREAD_TIMEOUT = 16 (2^16 cycles, some 20 microseconds), set before the first
// product: the pool reads it when it starts, so it is stopped here and restarts with it. Only
// the waiting changes, not what a product computes: the same bits.
bool tune_blas_spin() {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") || !openblas_read_env || !blas_thread_shutdown_) return false;
  if (openblas_get_num_threads() <= 1) return false;  // no pool threads
  setenv("OPENBLAS_THREAD_TIMEOUT", "16", 0);
  openblas_read_env();
  blas_thread_shutdown_();
  return true;
}
void ensure_blas_spin() {
  [[maybe_unused]] static const bool tuned = tune_blas_spin();
}

blasint to_blas(int64_t v, const char* what) {
  HKT_CHECK(v >= 0 && v <= static_cast<int64_t>(std::numeric_limits<blasint>::max()), "matmul: ", what, " = ", v,
            " exceeds the BLAS integer range");
  return static_cast<blasint>(v);
}

// beta * C over an m x n block with rows ldc apart (for k == 0).
template <class T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) std::fill(row, row + n, T(0));
    else
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
}

template <class T, class Blas>
void gemm_impl(Blas blas, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  ensure_blas_spin();
  if (k == 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  // BLAS validates ld >= max(1, columns of the stored matrix).
  HKT_CHECK(lda >= std::max<int64_t>(1, ta ? m : k) && ldb >= std::max<int64_t>(1, tb ? k : n) &&
                ldc >= std::max<int64_t>(1, n),
            "gemm: invalid leading dimensions lda=", lda, " ldb=", ldb, " ldc=", ldc, " for m=", m, " n=", n,
            " k=", k, " trans_a=", ta, " trans_b=", tb);
  if constexpr (std::is_same_v<T, float>)
    if (own_sgemm_enabled()) return own_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  blas(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, to_blas(m, "m"),
       to_blas(n, "n"), to_blas(k, "k"), alpha, a, to_blas(lda, "lda"), b, to_blas(ldb, "ldb"), beta, c,
       to_blas(ldc, "ldc"));
}

}  // namespace

int blas_num_threads() { return openblas_get_num_threads(); }

std::string blas_core() {
  const char* c = openblas_get_corename();
  return c ? c : "unknown";
}

std::string blas_core_advice() {
  if (own_sgemm_enabled()) return {};  // float32 products do not run in OpenBLAS
  const std::string core = blas_core();
  if (core != "Haswell" && core != "Zen") return {};  // its AVX2 kernel sets
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // What OpenBLAS's SkylakeX kernels use.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd"))
    return "OpenBLAS runs its " + core + " (AVX2) kernels on this AVX-512 CPU" +
           (std::getenv("OPENBLAS_CORETYPE") ? std::string(", as OPENBLAS_CORETYPE in the environment asks")
                                             : std::string(" (a model this OpenBLAS does not know)")) +
           "; its AVX-512 kernels (OPENBLAS_CORETYPE=SkylakeX, set before the process starts) multiply up to twice "
           "as fast, with other last bits, where this OpenBLAS build runs them correctly (docs/performance.md)";
#endif
  return {};
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_impl<float>(&cblas_sgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_impl<double>(&cblas_dgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                  const int64_t* a_offsets, const T* b, int64_t ldb, const int64_t* b_offsets, T* c,
                  int64_t batch) {
  if (batch <= 0 || m == 0 || n == 0) return;
  if (batch > 1 && !trans_a) {
    bool fold = true;
    for (int64_t i = 0; i < batch && fold; ++i)
      fold = a_offsets[i] == a_offsets[0] + i * m * lda && b_offsets[i] == b_offsets[0];
    if (fold) {
      gemm(false, trans_b, batch * m, n, k, T(1), a + a_offsets[0], lda, b + b_offsets[0], ldb, T(0), c, n);
      return;
    }
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, m, n, k, T(1), a + a_offsets[i], lda, b + b_offsets[i], ldb, T(0), c + i * m * n, n);
}

template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const int64_t*,
                                  const float*, int64_t, const int64_t*, float*, int64_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                                   const int64_t*, const double*, int64_t, const int64_t*, double*, int64_t);

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void matmul(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const int64_t* a_off,
            const void* b, int64_t ldb, const int64_t* b_off, void* c, int64_t batch) {
  gemm_batched<T>(ta, tb, m, n, k, buf<T>(a), lda, a_off, buf<T>(b), ldb, b_off, buf<T>(c), batch);
}
HKT_CPU_KERNEL(matmul)

}  // namespace hkt::cpu
