// The library's own float32 matrix product on AVX-512F (see sgemm_avx512.hpp).
#include "kernels/cpu/sgemm_avx512.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/avx2_math.hpp"
#include "kernels/cpu/parallel.hpp"

#include <tbb/task_arena.h>

namespace hkt::cpu {

#ifdef HKT_CPU_AVX2
namespace {

constexpr int64_t kR = 8;     // rows of a register tile
constexpr int64_t kC = 32;    // columns of a register tile and of a packed B panel (two registers)
constexpr int64_t kKb = 256;  // k per block: a B panel's block is 32 KiB, an A block of 64 rows 64 KiB
constexpr int64_t kMb = 64;   // rows per task

// B's columns [p 32, p 32 + 32) for k in [0, K): panel p at out + p K 32, [K][32], zero past n.
void pack_b_panel(const float* b, bool tb, int64_t ldb, int64_t n, int64_t K, int64_t p, float* out) {
  const int64_t j0 = p * kC, w = std::min(kC, n - j0);
  float* o = out + p * K * kC;
  if (!tb) {
    for (int64_t k = 0; k < K; ++k) {
      std::memcpy(o + k * kC, b + k * ldb + j0, static_cast<size_t>(w) * sizeof(float));
      std::fill(o + k * kC + w, o + (k + 1) * kC, 0.0f);
    }
    return;
  }
  // B stored [n][k] (a linear layer's weight): column j of op(B) is row j of b.
  for (int64_t k0 = 0; k0 < K; k0 += 64) {  // stripes of k, so the rows read stay in cache
    const int64_t k1 = std::min(K, k0 + 64);
    for (int64_t j = 0; j < w; ++j) {
      const float* src = b + (j0 + j) * ldb;
      for (int64_t k = k0; k < k1; ++k) o[k * kC + j] = src[k];
    }
    for (int64_t k = k0; k < k1; ++k) std::fill(o + k * kC + w, o + (k + 1) * kC, 0.0f);
  }
}

// A's rows [i0, i0 + rows) x k [k0, k1) into 8-row panels [k1 - k0][8] (zero rows past `rows`).
void pack_a_block(const float* a, bool ta, int64_t lda, int64_t i0, int64_t rows, int64_t k0, int64_t k1,
                  float* out) {
  const int64_t kn = k1 - k0;
  for (int64_t t = 0; t * kR < rows; ++t) {
    float* o = out + t * kn * kR;
    const int64_t r0 = t * kR, h = std::min(kR, rows - r0);
    if (ta) {  // A stored [k][m]: a row of 8 is contiguous
      for (int64_t k = k0; k < k1; ++k) {
        const float* src = a + k * lda + i0 + r0;
        float* dst = o + (k - k0) * kR;
        for (int64_t r = 0; r < h; ++r) dst[r] = src[r];
        for (int64_t r = h; r < kR; ++r) dst[r] = 0.0f;
      }
    } else {
      for (int64_t r = 0; r < kR; ++r) {
        if (r >= h) {
          for (int64_t k = 0; k < kn; ++k) o[k * kR + r] = 0.0f;
          continue;
        }
        const float* src = a + (i0 + r0 + r) * lda + k0;
        for (int64_t k = 0; k < kn; ++k) o[k * kR + r] = src[k];
      }
    }
  }
}

// acc[8][32] (rows ldw apart) over kn steps of the packed A panel ap [kn][8] and B panel block
// bp [kn][32]: loaded from acc when `load`, else from 0. Each element one FMA chain in k order.
__attribute__((target("avx2,fma,avx512f"))) void tile8x32(const float* ap, const float* bp, int64_t kn, float* acc,
                                                           int64_t ldw, bool load) {
  __m512 x[kR][2];
  for (int r = 0; r < kR; ++r) {
    x[r][0] = load ? _mm512_loadu_ps(acc + r * ldw) : _mm512_setzero_ps();
    x[r][1] = load ? _mm512_loadu_ps(acc + r * ldw + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kn; ++k) {
    const __m512 b0 = _mm512_load_ps(bp + k * kC), b1 = _mm512_load_ps(bp + k * kC + 16);
    const float* av = ap + k * kR;
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      const __m512 s = _mm512_set1_ps(av[r]);
      x[r][0] = _mm512_fmadd_ps(s, b0, x[r][0]);
      x[r][1] = _mm512_fmadd_ps(s, b1, x[r][1]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    _mm512_storeu_ps(acc + r * ldw, x[r][0]);
    _mm512_storeu_ps(acc + r * ldw + 16, x[r][1]);
  }
}

struct TaskScratch {
  std::vector<float> ap, acc;
};

// 64-byte aligned float storage that grows and is kept (by the calling thread).
struct Aligned {
  std::vector<float> v;
  float* get(size_t n) {
    if (v.size() < n + 16) v.resize(n + 16);
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
  }
};

// Rows [i0, i0 + rows) x panels [p0, p1) over k in [k0, k1) (k0 a multiple of kKb), from B's
// packed k rows [kb0, kb0 + kbn) (panel p at bp + p kbn 32), into acc (rows ldw apart) that
// holds the sums over k < k0.
void run_task(const float* a, bool ta, int64_t lda, const float* bp, int64_t kb0, int64_t kbn, int64_t i0,
              int64_t rows, int64_t p0, int64_t p1, int64_t k0, int64_t k1, float* acc, int64_t ldw,
              std::vector<float>& ap) {
  const int64_t tiles = (rows + kR - 1) / kR;
  ap.resize(static_cast<size_t>(tiles * kR * kKb));
  for (int64_t kk = k0; kk < k1; kk += kKb) {
    const int64_t kk1 = std::min(k1, kk + kKb), kn = kk1 - kk;
    pack_a_block(a, ta, lda, i0, rows, kk, kk1, ap.data());
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t q = 0; q < tiles; ++q)
        tile8x32(ap.data() + q * kn * kR, bp + p * kbn * kC + (kk - kb0) * kC, kn, acc + q * kR * ldw + (p - p0) * kC,
                 ldw, kk > 0);
  }
}

// C's rows [i0, i0 + rows) x columns [j0, j0 + cols) = alpha acc + beta C.
void write_out(const float* acc, int64_t ldw, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float alpha,
               float beta, float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = acc + r * ldw;
    float* cr = c + (i0 + r) * ldc + j0;
    if (beta == 0.0f)
      for (int64_t j = 0; j < cols; ++j) cr[j] = alpha * w[j];
    else
      for (int64_t j = 0; j < cols; ++j) cr[j] = alpha * w[j] + beta * cr[j];
  }
}

}  // namespace

bool own_sgemm_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("HKT_SGEMM");
    return simd::cpu_has_avx512f() && !(e && std::strcmp(e, "blas") == 0);
  }();
  return on;
}

void own_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t K, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int64_t np = (n + kC - 1) / kC, rb = (m + kMb - 1) / kMb;
  // The calling thread's buffers (fresh ones if a product runs inside another on this thread:
  // not expected, see the header).
  struct Kept {
    Aligned b, acc;
  };
  thread_local Kept kept;
  thread_local bool busy = false;
  Kept fresh;
  Kept& store = busy ? fresh : kept;
  const bool was = busy;
  busy = true;
  auto pack = [&](float* bp, int64_t kb0, int64_t kbn) {  // B's k rows [kb0, kb0 + kbn), every panel
    parallel_for(0, np, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) pack_b_panel(b + (tb ? kb0 : kb0 * ldb), tb, ldb, n, kbn, p, bp);
    });
  };
  if (rb >= 8) {
    // Many rows (activations times a weight): B packed whole once, tasks of kMb rows x all panels,
    // each summing in its own buffer.
    float* bp = store.b.get(static_cast<size_t>(np * K * kC));
    pack(bp, 0, K);
    parallel_for(0, rb, 1, [&](int64_t lo, int64_t hi) {
      TaskScratch& s = per_thread<TaskScratch>();
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t i0 = t * kMb, rows = std::min(kMb, m - i0), ldw = np * kC;
        s.acc.resize(static_cast<size_t>(((rows + kR - 1) / kR) * kR * ldw));
        run_task(a, ta, lda, bp, 0, K, i0, rows, 0, np, 0, K, s.acc.data(), ldw, s.ap);
        write_out(s.acc.data(), ldw, i0, rows, 0, n, alpha, beta, c, ldc);
      }
    });
  } else {
    // Few rows and often a long k (a weight's gradient, k = tokens): B packed kKs rows of k at a
    // time, so the packed copy stays small; tasks of kMb rows x one panel; the sums kept in one
    // buffer for the call across the stretches of k.
    constexpr int64_t kKs = 8 * kKb;
    const int64_t ldw = np * kC;
    // Panels per task: all of them where the row blocks alone give every thread two tasks (each
    // task packs its rows of A for each of its k blocks once), fewer where they do not. The split
    // changes no bits.
    const int64_t want = 2 * static_cast<int64_t>(tbb::this_task_arena::max_concurrency());
    const int64_t ppt = rb >= want ? np : std::max<int64_t>(1, (np * rb + want - 1) / want), cb = (np + ppt - 1) / ppt;
    float* acc = store.acc.get(static_cast<size_t>(rb * kMb * ldw));
    float* bp = store.b.get(static_cast<size_t>(np * std::min(K, kKs) * kC));
    for (int64_t ks = 0; ks < K; ks += kKs) {
      const int64_t ks1 = std::min(K, ks + kKs);
      pack(bp, ks, ks1 - ks);
      parallel_for(0, rb * cb, 1, [&](int64_t lo, int64_t hi) {
        TaskScratch& s = per_thread<TaskScratch>();
        for (int64_t t = lo; t < hi; ++t) {
          const int64_t i0 = (t / cb) * kMb, p0 = (t % cb) * ppt, p1 = std::min(np, p0 + ppt);
          run_task(a, ta, lda, bp, ks, ks1 - ks, i0, std::min(kMb, m - i0), p0, p1, ks, ks1,
                   acc + i0 * ldw + p0 * kC, ldw, s.ap);
        }
      });
    }
    parallel_for(0, rb, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t)
        write_out(acc + t * kMb * ldw, ldw, t * kMb, std::min(kMb, m - t * kMb), 0, n, alpha, beta, c, ldc);
    });
  }
  busy = was;
}
#else
bool own_sgemm_enabled() { return false; }
void own_sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
               float*, int64_t) {}
#endif

}  // namespace hkt::cpu
