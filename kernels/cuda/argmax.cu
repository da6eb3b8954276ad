// argmax on the GPU (sig::Argmax), as kernels/cpu/argmax.cpp: one thread per
// output walks its reduced elements in row-major order; the first maximum
// wins, and the first NaN over any number. Exact: the same indices as the CPU.
// (Simple, not tuned: a long reduced dim runs in one thread.)
#include <vector>

#include "kernels/backends.hpp"
#include "kernels/cuda/common.cuh"

namespace hkt::cuda {
namespace {

template <class T>
__global__ void argmax_thread(const T* x, int64_t* out, int64_t n_out, int64_t n_in, StridedIndex<1> outer,
                              StridedIndex<1> inner) {
  HKT_CUDA_LOOP(o, n_out) {
    int64_t base[1], off[1];
    outer.offsets(o, base);
    int64_t best = 0;
    T top = T(0);
    for (int64_t i = 0; i < n_in; ++i) {
      inner.offsets(i, off);
      const T v = x[base[0] + off[0]];
      if (v != v) {
        best = i;
        break;
      }
      if (i == 0 || v > top) best = i, top = v;
    }
    out[o] = best;
  }
}

}  // namespace

template <class T>
void argmax(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, int64_t* out) {
  const ReduceDims d = split_reduce_dims(shape, strides, red);
  const int64_t n_out = numel_of(d.kept_shape), n_in = numel_of(d.reduced_shape);
  if (n_out == 0) return;
  const Strides* so[1] = {&d.kept_strides};
  const Strides* si[1] = {&d.reduced_strides};
  const auto outer = make_index<1>(d.kept_shape, so, "argmax"), inner = make_index<1>(d.reduced_shape, si, "argmax");
  HKT_LAUNCH(blocks_for(n_out), kThreads, 0, argmax_thread<T>)(static_cast<const T*>(x), out, n_out, n_in, outer,
                                                                inner);
  CUDA_CHECK_LAUNCH();
}

HKT_CUDA_KERNEL(argmax)

}  // namespace hkt::cuda
