// sum and max over a set of dims. Blocks per output element (threads stride
// over the reduced elements, then a block reduction), or one thread per output
// when few elements are reduced. When there are few outputs (a loss, bias
// gradients) each output's range is split into chunks reduced by separate
// blocks, whose partial results a second kernel merges in chunk order: the
// bits do not depend on timing. Floats accumulate in double, as on the
// CPU. max propagates NaN like the CPU's MaxReducer.
#include <algorithm>
#include <limits>

#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

template <class T>
struct SumR {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  __device__ static Acc init() { return Acc(0); }
  __device__ Acc operator()(Acc a, Acc b) const { return a + b; }
  __device__ static Acc from(T v) { return static_cast<Acc>(v); }
};
template <class T>
struct MaxR {
  using Acc = T;
  __device__ static Acc init() { return std::numeric_limits<T>::lowest(); }
  __device__ static bool nan(T v) { return v != v; }
  __device__ Acc operator()(Acc a, Acc b) const { return (!nan(a) && (b > a || nan(b))) ? b : a; }
  __device__ static Acc from(T v) { return v; }
};

// Block (o, c) reduces chunk c of output o's elements x[outer(o) + inner(i)],
// i in [c * chunk, (c + 1) * chunk); part[o * chunks + c] = its result.
template <class T, class R, class Out>
__global__ void reduce_block(const T* x, Out* part, int64_t n_in, int64_t chunk, StridedIndex<1> outer,
                             StridedIndex<1> inner) {
  const R r;
  int64_t base[1];
  outer.offsets(blockIdx.x, base);
  typename R::Acc a = R::init();
  const int64_t begin = blockIdx.y * chunk, end = begin + chunk < n_in ? begin + chunk : n_in;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    int64_t off[1];
    inner.offsets(i, off);
    a = r(a, R::from(x[base[0] + off[0]]));
  }
  a = block_reduce(a, R::init(), r);
  if (threadIdx.x == 0) part[int64_t(blockIdx.x) * gridDim.y + blockIdx.y] = static_cast<Out>(a);
}
// out[o] = merge of part[o * chunks + c] over c in order.
template <class T, class R>
__global__ void reduce_parts(const typename R::Acc* part, T* out, int64_t n_out, int chunks) {
  const R r;
  HKT_CUDA_LOOP(o, n_out) {
    typename R::Acc a = R::init();
    for (int c = 0; c < chunks; ++c) a = r(a, part[o * chunks + c]);
    out[o] = static_cast<T>(a);
  }
}
template <class T, class R>
__global__ void reduce_thread(const T* x, T* out, int64_t n_out, int64_t n_in, StridedIndex<1> outer,
                              StridedIndex<1> inner) {
  const R r;
  HKT_CUDA_LOOP(o, n_out) {
    int64_t base[1];
    outer.offsets(o, base);
    typename R::Acc a = R::init();
    for (int64_t i = 0; i < n_in; ++i) {
      int64_t off[1];
      inner.offsets(i, off);
      a = r(a, R::from(x[base[0] + off[0]]));
    }
    out[o] = static_cast<T>(a);
  }
}

template <class T, class R>
void reduce(const void* xv, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* outv) {
  const ReduceDims dims = split_reduce_dims(shape, strides, red);
  const Shape &os = dims.kept_shape, &is = dims.reduced_shape;
  const Strides &ost = dims.kept_strides, &ist = dims.reduced_strides;
  const int64_t n_out = numel_of(os), n_in = numel_of(is);
  if (n_out == 0) return;
  const Strides* so[1] = {&ost};
  const Strides* si[1] = {&ist};
  const auto outer = make_index<1>(os, so, "reduce"), inner = make_index<1>(is, si, "reduce");
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(outv);
  if (n_in >= 64 && n_out <= (int64_t{1} << 31) - 1) {
    // About 2048 blocks in all, chunks of at least 4096 elements (one chunk when there are many outputs).
    const int64_t want = std::max<int64_t>(1, 2048 / n_out), most = std::max<int64_t>(1, n_in / 4096);
    const int chunks = static_cast<int>(std::min<int64_t>({want, most, 65535}));
    const int64_t chunk = (n_in + chunks - 1) / chunks;
    const dim3 grid(static_cast<unsigned>(n_out), static_cast<unsigned>(chunks));
    if (chunks == 1) {  // one block per output writes it
      HKT_LAUNCH(grid, kThreads, 0, reduce_block<T, R, T>)(x, out, n_in, chunk, outer, inner);
    } else {
      using Acc = typename R::Acc;
      Scratch part(static_cast<size_t>(n_out * chunks) * sizeof(Acc));
      HKT_LAUNCH(grid, kThreads, 0, reduce_block<T, R, Acc>)(x, part.as<Acc>(), n_in, chunk, outer, inner);
      CUDA_CHECK_LAUNCH();
      HKT_LAUNCH(blocks_for(n_out), kThreads, 0, reduce_parts<T, R>)(part.as<Acc>(), out, n_out, chunks);
    }
  } else {
    HKT_LAUNCH(blocks_for(n_out), kThreads, 0, reduce_thread<T, R>)(x, out, n_out, n_in, outer, inner);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void reduce_sum(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* out) {
  reduce<T, SumR<T>>(x, shape, strides, red, out);
}
template <class T>
void reduce_max(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* out) {
  reduce<T, MaxR<T>>(x, shape, strides, red, out);
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(sum, reduce_sum<T>)
HKT_CUDA_KERNEL_AS(max, reduce_max<T>)

}  // namespace hkt::cuda
