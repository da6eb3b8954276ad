// Strided N-operand loops: the engine behind every elementwise kernel.
//
// Operands share one logical shape; each has its own strides (in elements,
// 0 on broadcast dims). Dims are first coalesced where every operand allows
// it, then the element range is cut into runs along the innermost dim.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "hkt/core/shape.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {

template <size_t N>
struct Layout {
  Shape shape;
  std::array<Strides, N> strides;
};

// Merges adjacent dims that are contiguous with each other in every operand,
// and drops size-1 dims.
template <size_t N>
Layout<N> coalesce(const Shape& shape, const std::array<Strides, N>& strides) {
  Layout<N> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < N; ++k)
      merge = out.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      out.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) out.strides[k].back() = strides[k][d];
    } else {
      out.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) out.strides[k].push_back(strides[k][d]);
    }
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) out.strides[k].push_back(0);
  }
  return out;
}

// Calls f(offsets, n, steps) for runs of n elements covering linear indices
// [lo, hi) of the layout; offsets[k] is operand k's element offset at the run
// start and steps[k] its innermost stride.
template <size_t N, class F>
void for_each_run(const Layout<N>& L, int64_t lo, int64_t hi, F&& f) {
  const size_t nd = L.shape.size();
  const int64_t inner = L.shape[nd - 1];
  std::vector<int64_t> idx(nd);
  int64_t rem = lo;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rem % L.shape[d];
    rem /= L.shape[d];
  }
  std::array<int64_t, N> off{}, step{};
  for (size_t k = 0; k < N; ++k) {
    step[k] = L.strides[k][nd - 1];
    for (size_t d = 0; d < nd; ++d) off[k] += idx[d] * L.strides[k][d];
  }
  int64_t pos = lo;
  while (pos < hi) {
    const int64_t n = std::min(inner - idx[nd - 1], hi - pos);
    f(off, n, step);
    pos += n;
    if (pos >= hi) break;
    // advance to the start of the next run
    for (size_t k = 0; k < N; ++k) off[k] += (n - 1) * step[k];
    idx[nd - 1] += n - 1;
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < L.shape[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += L.strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= L.strides[k][d] * (L.shape[d] - 1);
      idx[d] = 0;
    }
  }
}

// Parallel version over the whole layout.
template <size_t N, class F>
void parallel_runs(const Shape& shape, const std::array<Strides, N>& strides, F&& f,
                   int64_t grain = kElementwiseGrain) {
  const Layout<N> L = coalesce<N>(shape, strides);
  parallel_for(0, numel_of(shape), grain, [&](int64_t lo, int64_t hi) { for_each_run<N>(L, lo, hi, f); });
}

}  // namespace hkt::cpu
