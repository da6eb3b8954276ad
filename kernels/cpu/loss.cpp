// CPU cross-entropy kernels: fused log-softmax + negative log-likelihood over
// the rows of a contiguous [N, C] logits array with int64 targets [N].
//
// Forward saves the per-row log-sum-exp only; backward recomputes the softmax
// from the logits as exp(x - lse). Rows are independent and each is reduced
// sequentially in double, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// ce_check (sig::CeCheck, the int64 slot: T = int64_t) validates targets:
// every target must be in [0, C) or equal `ignore`. Sets *bad_row to the first
// offending row (or -1) and *bad_value to its target, and *count to the number
// of targets not equal to `ignore`.
template <class T>
void ce_check(const int64_t* t, int64_t N, int64_t C, int64_t ignore, int64_t* bad_row, int64_t* bad_value,
              int64_t* count) {
  *bad_row = -1;
  *bad_value = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (t[i] == ignore) continue;
    if (t[i] < 0 || t[i] >= C) {
      *bad_row = i;
      *bad_value = t[i];
      break;
    }
    ++n;
  }
  *count = n;
}

// loss[i] = lse_i - x[i, t_i] (0 for ignored rows), lse[i] = log sum_j exp(x[i, j]).
// Targets must have been validated.
template <class T>
void ce_forward(const T* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, T* loss, T* lse) {
  if (N <= 0) return;
  parallel_for(0, N, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, C)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T* xr = x + i * C;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < C; ++j) m = xr[j] > m ? xr[j] : m;
      double l = static_cast<double>(m);  // log-sum-exp, in double
      if (m == -std::numeric_limits<T>::infinity()) {
        // No finite logit: lse is -inf, or NaN if a logit is NaN.
        for (int64_t j = 0; j < C; ++j)
          if (xr[j] != xr[j]) l = std::numeric_limits<double>::quiet_NaN();
      } else {
        double s = 0;
        for (int64_t j = 0; j < C; ++j) s += static_cast<double>(std::exp(xr[j] - m));
        l += std::log(s);
      }
      lse[i] = static_cast<T>(l);
      loss[i] = t[i] == ignore ? T(0) : static_cast<T>(l - static_cast<double>(xr[t[i]]));
    }
  });
}

// dx[i, j] = (exp(x[i, j] - lse_i) - [j == t_i]) * g[i * g_stride] * scale, and 0
// on ignored rows. g_stride is 0 for a reduced (scalar) loss, 1 for per-row.
template <class T>
void ce_backward(const T* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, const T* lse, const T* g,
                 int64_t g_stride, double scale, T* dx) {
  if (N <= 0) return;
  parallel_for(0, N, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, C)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T* xr = x + i * C;
      T* dr = dx + i * C;
      if (t[i] == ignore) {
        std::fill(dr, dr + C, T(0));
        continue;
      }
      const T gi = static_cast<T>(static_cast<double>(g[i * g_stride]) * scale);
      const T l = lse[i];
      for (int64_t j = 0; j < C; ++j) dr[j] = std::exp(xr[j] - l) * gi;
      dr[t[i]] -= gi;
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void cross_entropy(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, void* loss, void* lse) {
  ce_forward<T>(buf<T>(x), t, N, C, ignore, buf<T>(loss), buf<T>(lse));
}
template <class T>
void cross_entropy_backward(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, const void* lse,
                            const void* g, int64_t g_stride, double scale, void* dx) {
  ce_backward<T>(buf<T>(x), t, N, C, ignore, buf<T>(lse), buf<T>(g), g_stride, scale, buf<T>(dx));
}
HKT_CPU_KERNEL(ce_check)
HKT_CPU_KERNEL(cross_entropy)
HKT_CPU_KERNEL(cross_entropy_backward)

}  // namespace hkt::cpu
