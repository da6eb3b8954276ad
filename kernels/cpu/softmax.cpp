// CPU softmax / log-softmax kernels.
//
// The input is viewed as a contiguous [outer, D, inner] array and the op runs
// along the middle dim (D): inner == 1 is the fast path (each row is a
// contiguous run); otherwise a block of up to kSoftmaxBlock neighbouring
// columns is processed together, so that every load is still contiguous.
// Each row (or column) is reduced sequentially in double, so results do not
// depend on the number of threads.
//
// Degenerate rows: a row whose elements are all -inf has no defined softmax;
// softmax gives 0 there and log_softmax gives -inf (their backward gives 0).
// NaN anywhere in a row makes the whole row NaN.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

inline constexpr int64_t kSoftmaxBlock = 64;

namespace detail {

// Tasks of ~kElementwiseGrain elements each, `per_task` elements per task index.
inline int64_t task_grain(int64_t per_task) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, per_task));
}

// Fills a row (n elements, `stride` apart) that holds no finite element:
// NaN if it holds a NaN, else 0 (softmax) or -inf (log_softmax).
template <class T, bool Log>
void fill_degenerate(const T* x, T* y, int64_t n, int64_t stride) {
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) nan |= x[j * stride] != x[j * stride];
  const T v = nan ? std::numeric_limits<T>::quiet_NaN() : Log ? -std::numeric_limits<T>::infinity() : T(0);
  for (int64_t j = 0; j < n; ++j) y[j * stride] = v;
}

}  // namespace detail

// y = softmax(x) (Log = false) or log_softmax(x) (Log = true) along D.
template <class T, bool Log>
void softmax_forward(const T* x, T* y, int64_t outer, int64_t D, int64_t inner) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if (outer <= 0 || D <= 0 || inner <= 0) return;
  if (inner == 1) {
    parallel_for(0, outer, detail::task_grain(D), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const T* xr = x + r * D;
        T* yr = y + r * D;
        T m = kNegInf;
        for (int64_t j = 0; j < D; ++j) m = xr[j] > m ? xr[j] : m;  // NaN is skipped here
        if (m == kNegInf) {
          detail::fill_degenerate<T, Log>(xr, yr, D, 1);
          continue;
        }
        double s = 0;
        if constexpr (Log) {
          for (int64_t j = 0; j < D; ++j) s += static_cast<double>(std::exp(xr[j] - m));
          const T ls = static_cast<T>(std::log(s));
          for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - m) - ls;
        } else {
          for (int64_t j = 0; j < D; ++j) {
            const T e = std::exp(xr[j] - m);
            yr[j] = e;
            s += static_cast<double>(e);
          }
          const T inv = static_cast<T>(1.0 / s);
          for (int64_t j = 0; j < D; ++j) yr[j] *= inv;
        }
      }
    });
    return;
  }
  // Strided rows: tasks are (outer index, block of columns).
  const int64_t nb = (inner + kSoftmaxBlock - 1) / kSoftmaxBlock;
  parallel_for(0, outer * nb, detail::task_grain(D * std::min(inner, kSoftmaxBlock)), [&](int64_t lo, int64_t hi) {
    T m[kSoftmaxBlock];
    double s[kSoftmaxBlock];
    T off[kSoftmaxBlock];
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / nb, c0 = (t % nb) * kSoftmaxBlock;
      const int64_t w = std::min(kSoftmaxBlock, inner - c0);
      const T* xb = x + o * D * inner + c0;
      T* yb = y + o * D * inner + c0;
      for (int64_t c = 0; c < w; ++c) {
        m[c] = kNegInf;
        s[c] = 0;
      }
      for (int64_t j = 0; j < D; ++j)
        for (int64_t c = 0; c < w; ++c) m[c] = xb[j * inner + c] > m[c] ? xb[j * inner + c] : m[c];
      bool degenerate = false;
      for (int64_t c = 0; c < w; ++c) degenerate |= m[c] == kNegInf;
      if (degenerate) {  // keep the arithmetic below finite; fixed up at the end
        for (int64_t c = 0; c < w; ++c)
          if (m[c] == kNegInf) m[c] = 0;
      }
      for (int64_t j = 0; j < D; ++j) {
        for (int64_t c = 0; c < w; ++c) {
          const T e = std::exp(xb[j * inner + c] - m[c]);
          if constexpr (!Log) yb[j * inner + c] = e;
          s[c] += static_cast<double>(e);
        }
      }
      if constexpr (Log) {
        for (int64_t c = 0; c < w; ++c) off[c] = static_cast<T>(std::log(s[c]));
        for (int64_t j = 0; j < D; ++j)
          for (int64_t c = 0; c < w; ++c) yb[j * inner + c] = (xb[j * inner + c] - m[c]) - off[c];
      } else {
        for (int64_t c = 0; c < w; ++c) off[c] = static_cast<T>(1.0 / s[c]);
        for (int64_t j = 0; j < D; ++j)
          for (int64_t c = 0; c < w; ++c) yb[j * inner + c] *= off[c];
      }
      if (degenerate) {
        for (int64_t c = 0; c < w; ++c) {
          if (s[c] == 0) detail::fill_degenerate<T, Log>(xb + c, yb + c, D, inner);  // s >= 1 or NaN otherwise
        }
      }
    }
  });
}

// Backward along D, given the forward output y and the gradient g:
//   softmax:      dx = y * (g - sum(g * y))
//   log_softmax:  dx = g - exp(y) * sum(g)   (0 on all -inf rows)
template <class T, bool Log>
void softmax_grad(const T* y, const T* g, T* dx, int64_t outer, int64_t D, int64_t inner) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if (outer <= 0 || D <= 0 || inner <= 0) return;
  if (inner == 1) {
    parallel_for(0, outer, detail::task_grain(D), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const T* yr = y + r * D;
        const T* gr = g + r * D;
        T* dr = dx + r * D;
        double s = 0;
        if constexpr (Log) {
          bool live = false;
          for (int64_t j = 0; j < D; ++j) {
            s += static_cast<double>(gr[j]);
            live |= yr[j] != kNegInf;
          }
          if (!live) {
            std::fill(dr, dr + D, T(0));
            continue;
          }
          const T st = static_cast<T>(s);
          for (int64_t j = 0; j < D; ++j) dr[j] = gr[j] - std::exp(yr[j]) * st;
        } else {
          for (int64_t j = 0; j < D; ++j) s += static_cast<double>(gr[j]) * static_cast<double>(yr[j]);
          const T st = static_cast<T>(s);
          for (int64_t j = 0; j < D; ++j) dr[j] = yr[j] * (gr[j] - st);
        }
      }
    });
    return;
  }
  const int64_t nb = (inner + kSoftmaxBlock - 1) / kSoftmaxBlock;
  parallel_for(0, outer * nb, detail::task_grain(D * std::min(inner, kSoftmaxBlock)), [&](int64_t lo, int64_t hi) {
    double s[kSoftmaxBlock];
    T st[kSoftmaxBlock];
    bool live[kSoftmaxBlock];
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / nb, c0 = (t % nb) * kSoftmaxBlock;
      const int64_t w = std::min(kSoftmaxBlock, inner - c0);
      const int64_t base = o * D * inner + c0;
      const T* yb = y + base;
      const T* gb = g + base;
      T* db = dx + base;
      for (int64_t c = 0; c < w; ++c) {
        s[c] = 0;
        live[c] = false;
      }
      for (int64_t j = 0; j < D; ++j) {
        for (int64_t c = 0; c < w; ++c) {
          const int64_t k = j * inner + c;
          if constexpr (Log) {
            s[c] += static_cast<double>(gb[k]);
            live[c] = live[c] || yb[k] != kNegInf;
          } else {
            s[c] += static_cast<double>(gb[k]) * static_cast<double>(yb[k]);
          }
        }
      }
      for (int64_t c = 0; c < w; ++c) st[c] = static_cast<T>(s[c]);
      for (int64_t j = 0; j < D; ++j) {
        for (int64_t c = 0; c < w; ++c) {
          const int64_t k = j * inner + c;
          if constexpr (Log)
            db[k] = live[c] ? gb[k] - std::exp(yb[k]) * st[c] : T(0);
          else
            db[k] = yb[k] * (gb[k] - st[c]);
        }
      }
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void softmax(const void* x, void* y, int64_t outer, int64_t D, int64_t inner) {
  softmax_forward<T, false>(buf<T>(x), buf<T>(y), outer, D, inner);
}
template <class T>
void log_softmax(const void* x, void* y, int64_t outer, int64_t D, int64_t inner) {
  softmax_forward<T, true>(buf<T>(x), buf<T>(y), outer, D, inner);
}
template <class T>
void softmax_backward(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner) {
  softmax_grad<T, false>(buf<T>(y), buf<T>(g), buf<T>(dx), outer, D, inner);
}
template <class T>
void log_softmax_backward(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner) {
  softmax_grad<T, true>(buf<T>(y), buf<T>(g), buf<T>(dx), outer, D, inner);
}
HKT_CPU_KERNEL(softmax)
HKT_CPU_KERNEL(log_softmax)
HKT_CPU_KERNEL(softmax_backward)
HKT_CPU_KERNEL(log_softmax_backward)

}  // namespace hkt::cpu
