// CPU reductions over a set of dims.
//
// The kept dims form the output (contiguous, in order); the reduced dims are
// walked in row-major order. Long reductions are cut into fixed chunks whose
// partial results are merged in chunk order, so the result is the same for
// any number of threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hkt/core/shape.hpp"
#include "kernels/cpu/loops.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

inline int64_t offset_of(int64_t linear, const Shape& shape, const Strides& strides) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return off;
}

// R provides: using Acc; Acc init(); void add(Acc&, T); void merge(Acc&, const Acc&); T finish(const Acc&).
template <class T, class R>
void reduce(const T* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, T* out, R r) {
  using Acc = typename R::Acc;
  const ReduceDims dims = split_reduce_dims(shape, strides, red);
  const Shape &os = dims.kept_shape, &is = dims.reduced_shape;
  const Strides &ost = dims.kept_strides, &ist = dims.reduced_strides;
  const int64_t n_out = numel_of(os), n_in = numel_of(is);
  if (n_out == 0) return;
  const Layout<1> L = coalesce<1>(is, {ist});
  auto run = [&](Acc& a, int64_t base, int64_t lo, int64_t hi) {
    if (lo >= hi) return;
    for_each_run<1>(L, lo, hi, [&](auto off, int64_t n, auto st) {
      const T* p = x + base + off[0];
      for (int64_t i = 0; i < n; ++i) r.add(a, p[i * st[0]]);
    });
  };
  constexpr int64_t kChunk = 1 << 14;
  const int64_t n_chunks = n_in > kChunk ? (n_in + kChunk - 1) / kChunk : 1;
  const Layout<1> Lo = coalesce<1>(os, {ost});
  if (L.shape.size() == 1 && Lo.shape.size() == 1 && Lo.strides[0][0] == 1) {
    // Column sums (e.g. a bias gradient: [N, D] over N): walk the rows in
    // order, updating a block of contiguous outputs per row, instead of one
    // strided column per output. Same chunks and order as below, so the same bits.
    const int64_t sr = L.strides[0][0];
    constexpr int64_t kBlock = 512;
    const int64_t n_blocks = (n_out + kBlock - 1) / kBlock;
    std::vector<Acc> part(static_cast<size_t>(n_chunks * n_out));
    parallel_for(0, n_chunks * n_blocks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t c = t / n_blocks, o0 = (t % n_blocks) * kBlock, o1 = std::min(n_out, o0 + kBlock);
        Acc* a = part.data() + c * n_out;
        for (int64_t o = o0; o < o1; ++o) a[o] = r.init();
        for (int64_t i = c * kChunk, ie = std::min(n_in, (c + 1) * kChunk); i < ie; ++i) {
          const T* p = x + i * sr;
          for (int64_t o = o0; o < o1; ++o) r.add(a[o], p[o]);
        }
      }
    });
    for (int64_t o = 0; o < n_out; ++o) {
      Acc a = part[static_cast<size_t>(o)];
      for (int64_t c = 1; c < n_chunks; ++c) r.merge(a, part[static_cast<size_t>(c * n_out + o)]);
      out[o] = r.finish(a);
    }
    return;
  }
  if (n_chunks == 1) {
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n_in));
    parallel_for(0, n_out, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        Acc a = r.init();
        run(a, offset_of(o, os, ost), 0, n_in);
        out[o] = r.finish(a);
      }
    });
    return;
  }
  std::vector<Acc> part(static_cast<size_t>(n_out * n_chunks));
  parallel_for(0, n_out * n_chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / n_chunks, c = t % n_chunks;
      Acc a = r.init();
      run(a, offset_of(o, os, ost), c * kChunk, std::min(n_in, (c + 1) * kChunk));
      part[t] = a;
    }
  });
  for (int64_t o = 0; o < n_out; ++o) {
    Acc a = part[o * n_chunks];
    for (int64_t c = 1; c < n_chunks; ++c) r.merge(a, part[o * n_chunks + c]);
    out[o] = r.finish(a);
  }
}

template <class T>
struct SumReducer {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  Acc init() const { return Acc(0); }
  void add(Acc& a, T v) const { a += static_cast<Acc>(v); }
  void merge(Acc& a, const Acc& b) const { a += b; }
  T finish(const Acc& a) const { return static_cast<T>(a); }
};

// NaN propagates: once a NaN is seen the result is NaN.
template <class T>
struct MaxReducer {
  using Acc = T;
  Acc init() const { return std::numeric_limits<T>::lowest(); }
  static bool is_nan(T v) { return v != v; }
  void add(Acc& a, T v) const {
    if (!is_nan(a) && (v > a || is_nan(v))) a = v;
  }
  void merge(Acc& a, const Acc& b) const { add(a, b); }
  T finish(const Acc& a) const { return a; }
};

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void sum(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* o) {
  reduce<T>(buf<T>(x), shape, strides, red, buf<T>(o), SumReducer<T>{});
}
template <class T>
void max(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* o) {
  reduce<T>(buf<T>(x), shape, strides, red, buf<T>(o), MaxReducer<T>{});
}
HKT_CPU_KERNEL(sum)
HKT_CPU_KERNEL(max)

}  // namespace hkt::cpu
