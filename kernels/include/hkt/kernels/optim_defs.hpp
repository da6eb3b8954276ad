// The per-element updates of the optimizers, shared by the CPU loops
// (kernels/cpu/optim.cpp) and the CUDA kernels (kernels/cuda/optim.cu), so the
// two backends compute the same arithmetic in the same order.
#pragma once
#include <cmath>
#include <cstdint>

#include "hkt/kernels/elementwise_defs.hpp"  // HKT_HD

namespace hkt::opt {

// One tensor of a multi-tensor sum of squares or scale (gradient clipping):
// its data (host or device, as the backend's) and its element count.
struct MultiTensor {
  void* x;
  int64_t n;
};

// One parameter of a multi-tensor AdamW step (buffers as the backend's,
// per-tensor scalars of adamw_one).
struct AdamWTensor {
  void* p;
  const void* g;
  void* m;
  void* v;
  int64_t n;
  double decay, step_size, bc2_sqrt;
};

// SGD with momentum, dampening, weight decay and Nesterov (torch.optim.SGD):
//   d = g + wd p;  b = first ? d : momentum b + (1 - dampening) d;  d = nesterov ? d + momentum b : b
//   p = p - lr d
// buf may be null when momentum == 0.
template <class T>
HKT_HD void sgd_one(T* p, const T* g, T* buf, int64_t i, double lr, double momentum, double dampening, double wd,
                    bool nesterov, bool first_step) {
  const double pi = static_cast<double>(p[i]);
  double d = static_cast<double>(g[i]);
  if (wd != 0.0) d += wd * pi;
  if (momentum != 0.0) {
    const double b = first_step ? d : momentum * static_cast<double>(buf[i]) + (1.0 - dampening) * d;
    buf[i] = static_cast<T>(b);
    d = nesterov ? d + momentum * b : b;
  }
  p[i] = static_cast<T>(pi - lr * d);
}

// AdamW (decoupled decay) with the per-step scalars precomputed in double:
//   decay = 1 - lr wd, step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t)
template <class T>
HKT_HD void adamw_one(T* p, const T* g, T* m, T* v, int64_t i, double beta1, double beta2, double eps, double decay,
                      double step_size, double bc2_sqrt) {
  const double gi = static_cast<double>(g[i]);
  const double mi = beta1 * static_cast<double>(m[i]) + (1.0 - beta1) * gi;
  const double vi = beta2 * static_cast<double>(v[i]) + (1.0 - beta2) * gi * gi;
  m[i] = static_cast<T>(mi);
  v[i] = static_cast<T>(vi);
  const double pi = static_cast<double>(p[i]) * decay;
  p[i] = static_cast<T>(pi - step_size * mi / (std::sqrt(vi) / bc2_sqrt + eps));
}

}  // namespace hkt::opt
