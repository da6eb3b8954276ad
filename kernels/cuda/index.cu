// Indexing kernels on the GPU, as kernels/cpu/index.cpp: the index range
// check, the strided gather (index_select, embedding, gather) and the two
// scatter-adds of their backwards. The scatter-adds give every destination
// element to one thread, which adds its contributions in ascending source
// order: no atomics, reproducible bits.
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/runtime.hpp"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

__global__ void range_kernel(const int64_t* idx, int64_t n, StridedIndex<1> ix, int64_t size,
                             unsigned long long* first) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[1];
    ix.offsets(i, off);
    const int64_t v = idx[off[0]];
    if (v < 0 || v >= size) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

template <class T>
__global__ void gather_kernel(const T* x, int64_t xd, const int64_t* idx, T* out, int64_t n, StridedIndex<3> ix) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    out[off[2]] = x[off[0] + idx[off[1]] * xd];
  }
}

// gx[o, r, :] = sum over the bucket of r (ascending j) of g[o, j, :].
template <class T>
__global__ void index_add_kernel(const T* g, const int64_t* start, const int64_t* order, int64_t n, int64_t inner,
                                 int64_t size, T* gx, int64_t total) {
  HKT_CUDA_LOOP(e, total) {
    const int64_t i = e % inner, t = e / inner, o = t / size, r = t % size;
    T acc = T(0);
    for (int64_t q = start[r]; q < start[r + 1]; ++q) acc += g[(o * n + order[q]) * inner + i];
    gx[e] = acc;
  }
}

template <class T>
__global__ void scatter_add_kernel(const T* g, int64_t g_dim, const int64_t* idx, int64_t i_dim, T* gx,
                                   int64_t gx_dim, int64_t len, int64_t n_cols, StridedIndex<3> ix) {
  HKT_CUDA_LOOP(col, n_cols) {
    int64_t off[3];
    ix.offsets(col, off);
    const T* gp = g + off[0];
    const int64_t* ip = idx + off[1];
    T* dp = gx + off[2];
    for (int64_t j = 0; j < len; ++j) dp[ip[j * i_dim] * gx_dim] += gp[j * g_dim];
  }
}

}  // namespace

int64_t first_out_of_range(const int64_t* idx, const Strides& is, const Shape& shape, int64_t size, int64_t* bad) {
  const int64_t n = numel_of(shape);
  if (n == 0) return -1;
  const Strides* st[1] = {&is};
  const auto ix = make_index<1>(shape, st, "index_check");
  Scratch first(sizeof(unsigned long long));
  CUDA_CHECK(cudaMemsetAsync(first.as<void>(), 0xff, sizeof(unsigned long long), stream()));
  HKT_LAUNCH(blocks_for(n), kThreads, 0, range_kernel)(idx, n, ix, size, first.as<unsigned long long>());
  CUDA_CHECK_LAUNCH();
  unsigned long long pos = 0;
  copy_device_to_host(&pos, first.as<void>(), sizeof(pos));
  if (pos == ~0ull) return -1;
  // The offending value: the element at linear position pos.
  int64_t off = 0, rem = static_cast<int64_t>(pos);
  for (size_t d = shape.size(); d-- > 0;) {
    off += (rem % shape[d]) * is[d];
    rem /= shape[d];
  }
  copy_device_to_host(bad, idx + off, sizeof(int64_t));
  return static_cast<int64_t>(pos);
}

template <class T>
void indexed_gather(const void* x, const Strides& xs, int64_t x_dim_stride, const int64_t* idx, const Strides& is,
                    void* out, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides os = contiguous_strides(shape);
  const Strides* st[3] = {&xs, &is, &os};
  const auto ix = make_index<3>(shape, st, "gather");
  HKT_LAUNCH(blocks_for(n), kThreads, 0, gather_kernel<T>)(static_cast<const T*>(x), x_dim_stride, idx,
                                                             static_cast<T*>(out), n, ix);
  CUDA_CHECK_LAUNCH();
}

// The destination rows' buckets are built on the host (a stable counting sort
// of the n indices, copied back and forth once): then each output element is
// summed by one thread in ascending j, as on the CPU.
template <class T>
void index_add_rows(const void* g, const int64_t* idx, int64_t outer, int64_t n, int64_t inner, void* gx,
                    int64_t size) {
  const int64_t total = outer * size * inner;
  if (total == 0) return;
  std::vector<int64_t> h(static_cast<size_t>(n));
  copy_device_to_host(h.data(), idx, static_cast<size_t>(n) * sizeof(int64_t));
  std::vector<int64_t> table(static_cast<size_t>(size + 1 + n), 0);  // start [size + 1], then order [n]
  int64_t* start = table.data();
  int64_t* order = table.data() + size + 1;
  for (int64_t j = 0; j < n; ++j) ++start[h[j] + 1];
  for (int64_t r = 0; r < size; ++r) start[r + 1] += start[r];
  {
    std::vector<int64_t> fill(start, start + size);
    for (int64_t j = 0; j < n; ++j) order[fill[h[j]]++] = j;
  }
  Scratch dev(table.size() * sizeof(int64_t));
  copy_host_to_device(dev.as<void>(), table.data(), table.size() * sizeof(int64_t));
  HKT_LAUNCH(blocks_for(total), kThreads, 0, index_add_kernel<T>)(static_cast<const T*>(g), dev.as<int64_t>(),
                                                                     dev.as<int64_t>() + size + 1, n, inner, size,
                                                                     static_cast<T*>(gx), total);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void scatter_add_dim(const void* g, const Strides& gs, int64_t g_dim, const int64_t* idx, const Strides& is,
                     int64_t i_dim, void* gx, const Strides& gxs, int64_t gx_dim, const Shape& cols, int64_t len) {
  const int64_t n_cols = numel_of(cols);
  if (n_cols == 0 || len == 0) return;
  const Strides* st[3] = {&gs, &is, &gxs};
  const auto ix = make_index<3>(cols, st, "scatter_add");
  HKT_LAUNCH(blocks_for(n_cols), kThreads, 0, scatter_add_kernel<T>)(
      static_cast<const T*>(g), g_dim, idx, i_dim, static_cast<T*>(gx), gx_dim, len, n_cols, ix);
  CUDA_CHECK_LAUNCH();
}

#define HKT_INST(T)                                                                                           \
  template void index_add_rows<T>(const void*, const int64_t*, int64_t, int64_t, int64_t, void*, int64_t);    \
  template void scatter_add_dim<T>(const void*, const Strides&, int64_t, const int64_t*, const Strides&,      \
                                   int64_t, void*, const Strides&, int64_t, const Shape&, int64_t);
HKT_INST(float)
HKT_INST(double)
#undef HKT_INST

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(index_check, first_out_of_range)
HKT_CUDA_KERNEL_AS(gather, indexed_gather<T>)
HKT_CUDA_KERNEL_AS(index_add, index_add_rows<T>)
HKT_CUDA_KERNEL_AS(scatter_add, scatter_add_dim<T>)

}  // namespace hkt::cuda
