// CPU kernels of the optimizer updates: one fused pass over a parameter, its
// gradient and its state, all contiguous buffers of n elements. The
// arithmetic is done in double for both float and double parameters; state
// is stored in the parameter's type. Elementwise work is split into fixed
// chunks, so the results never depend on the number of threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "hkt/kernels/optim_defs.hpp"
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// SGD with momentum (PyTorch's torch.optim.SGD):
//   d = g + wd * p
//   buf = first_step ? d : momentum * buf + (1 - dampening) * d     (when momentum != 0)
//   d = nesterov ? d + momentum * buf : buf                         (when momentum != 0)
//   p = p - lr * d
// buf may be null when momentum == 0.
template <class T>
void sgd_update(T* p, const T* g, T* buf, int64_t n, double lr, double momentum, double dampening, double wd,
                bool nesterov, bool first_step) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) opt::sgd_one(p, g, buf, i, lr, momentum, dampening, wd, nesterov, first_step);
  });
}

// AdamW (Loshchilov & Hutter; torch.optim.AdamW without amsgrad), with the
// per-step scalars precomputed by the caller in double:
//   decay = 1 - lr * wd, step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t)
//   p = p * decay
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)      (= lr * m_hat / (sqrt(v_hat) + eps))
template <class T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, double beta1, double beta2, double eps, double decay,
                  double step_size, double bc2_sqrt) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) opt::adamw_one(p, g, m, v, i, beta1, beta2, eps, decay, step_size, bc2_sqrt);
  });
}

// sum of x[i]^2 accumulated in double: fixed chunks, merged in chunk order.
template <class T>
double sum_squares_chunked(const T* x, int64_t n) {
  constexpr int64_t kChunk = rules::kSumSquaresChunk;
  auto chunk = [&](int64_t lo, int64_t hi) {
    double s = 0.0;
    for (int64_t i = lo; i < hi; ++i) {
      const double xi = static_cast<double>(x[i]);
      s += xi * xi;
    }
    return s;
  };
  if (n <= kChunk) return chunk(0, n);
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<size_t>(n_chunks));
  parallel_for(0, n_chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) part[c] = chunk(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
  double s = 0.0;
  for (double v : part) s += v;
  return s;
}

// x = x * factor (computed in double).
template <class T>
void scale_values(T* x, int64_t n, double factor) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) x[i] = static_cast<T>(static_cast<double>(x[i]) * factor);
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void sgd(void* p, const void* g, void* m, int64_t n, double lr, double momentum, double dampening, double wd,
         bool nesterov, bool first_step) {
  sgd_update<T>(buf<T>(p), buf<T>(g), buf<T>(m), n, lr, momentum, dampening, wd, nesterov, first_step);
}
template <class T>
void adamw(void* p, const void* g, void* m, void* v, int64_t n, double beta1, double beta2, double eps, double decay,
           double step_size, double bc2_sqrt) {
  adamw_update<T>(buf<T>(p), buf<T>(g), buf<T>(m), buf<T>(v), n, beta1, beta2, eps, decay, step_size, bc2_sqrt);
}
template <class T>
void adamw_multi(const std::vector<opt::AdamWTensor>& ts, double beta1, double beta2, double eps) {
  for (const opt::AdamWTensor& t : ts)
    adamw<T>(t.p, t.g, t.m, t.v, t.n, beta1, beta2, eps, t.decay, t.step_size, t.bc2_sqrt);
}
template <class T>
double sum_squares(const void* x, int64_t n) {
  return sum_squares_chunked<T>(buf<T>(x), n);
}
template <class T>
void scale(void* x, int64_t n, double factor) {
  scale_values<T>(buf<T>(x), n, factor);
}
template <class T>
void sum_squares_multi(const std::vector<opt::MultiTensor>& ts, double* o) {
  for (size_t i = 0; i < ts.size(); ++i) o[i] = sum_squares_chunked<T>(buf<T>(ts[i].x), ts[i].n);
}
template <class T>
void scale_multi(const std::vector<opt::MultiTensor>& ts, double factor) {
  for (const opt::MultiTensor& t : ts) scale_values<T>(buf<T>(t.x), t.n, factor);
}
HKT_CPU_KERNEL(sgd)
HKT_CPU_KERNEL(adamw)
HKT_CPU_KERNEL(adamw_multi)
HKT_CPU_KERNEL(sum_squares)
HKT_CPU_KERNEL(scale)
HKT_CPU_KERNEL(sum_squares_multi)
HKT_CPU_KERNEL(scale_multi)

}  // namespace hkt::cpu
