// CPU kernels for the indexing ops (index_select, embedding, gather) and
// their scatter-add backwards. Raw pointers, shapes and strides only.
//
// Determinism: every scatter-add writes each destination element from exactly
// one task, and that task adds the contributions in ascending source order,
// so the result is bitwise identical for any thread count and never races.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "hkt/core/shape.hpp"
#include "kernels/cpu/loops.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// index_check (sig::IndexRange, the int64 slot: T = int64_t): linear (row-major)
// position of the first index outside [0, size), or -1. `idx` is strided with
// `strides` over `shape`; `*bad` receives its value.
template <class T>
int64_t index_check(const int64_t* idx, const Strides& strides, const Shape& shape, int64_t size, int64_t* bad) {
  int64_t found = -1;
  if (numel_of(shape) == 0) return found;
  const Layout<1> L = coalesce<1>(shape, {strides});
  const int64_t n = numel_of(shape);
  int64_t pos = 0;
  for_each_run<1>(L, 0, n, [&](auto off, int64_t len, auto st) {
    if (found < 0) {
      const int64_t* p = idx + off[0];
      for (int64_t i = 0; i < len; ++i) {
        const int64_t v = p[i * st[0]];
        if (v < 0 || v >= size) {
          found = pos + i;
          *bad = v;
          break;
        }
      }
    }
    pos += len;
  });
  return found;
}

// Indexed gather over a strided layout of logical shape `shape`:
//   out[e] = x[xoff(e) + idx[ioff(e)] * x_dim_stride]
// where xoff/ioff are the element offsets given by the strides `xs` (0 along
// the indexed positions) and `is` (0 along dims the index does not cover).
// `out` is contiguous. This is both index_select (dims = outer, index dims,
// inner) and gather (dims = the index's dims).
template <class T>
void indexed_gather(const T* x, const Strides& xs, int64_t x_dim_stride, const int64_t* idx, const Strides& is,
                    T* out, const Shape& shape) {
  parallel_runs<3>(shape, {xs, is, contiguous_strides(shape)}, [&](auto off, int64_t n, auto st) {
    const T* xp = x + off[0];
    const int64_t* ip = idx + off[1];
    T* op = out + off[2];
    if (st[1] == 0) {  // one index for the whole run (an embedding row)
      const T* row = xp + ip[0] * x_dim_stride;
      if (st[0] == 1 && st[2] == 1) {
        std::copy(row, row + n, op);
      } else {
        for (int64_t i = 0; i < n; ++i) op[i * st[2]] = row[i * st[0]];
      }
    } else {
      for (int64_t i = 0; i < n; ++i) op[i * st[2]] = xp[i * st[0] + ip[i * st[1]] * x_dim_stride];
    }
  });
}

// index_select backward (index-add): gx [outer, size, inner] (contiguous,
// fully overwritten) gets gx[o, idx[j], :] += g[o, j, :] for g [outer, n,
// inner] (contiguous), idx [n] (contiguous, all in [0, size)).
//
// The positions j are bucketed by destination row with a stable counting
// sort; the work is then split over the destination rows (o, r), each summing
// its bucket in ascending j. No two tasks touch the same row.
template <class T>
void index_add_rows(const T* g, const int64_t* idx, int64_t outer, int64_t n, int64_t inner, T* gx, int64_t size) {
  std::vector<int64_t> start(static_cast<size_t>(size) + 1, 0), order(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) ++start[static_cast<size_t>(idx[j]) + 1];
  for (int64_t r = 0; r < size; ++r) start[r + 1] += start[r];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t j = 0; j < n; ++j) order[fill[idx[j]]++] = j;
  }
  const int64_t per_row = std::max<int64_t>(1, inner * std::max<int64_t>(1, n / std::max<int64_t>(1, size)));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / per_row);
  parallel_for(0, outer * size, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / size, r = t % size;
      T* dst = gx + t * inner;
      std::fill(dst, dst + inner, T(0));
      for (int64_t k = start[r]; k < start[r + 1]; ++k) {
        const T* src = g + (o * n + order[k]) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
      }
    }
  });
}

// gather backward (scatter-add along one dim):
//   gx[c with c[dim] = idx[e]] += g[e]   for every element e of the index shape
// gx is contiguous and zero-filled by the caller. `cols` is the index shape
// with the gathered dim removed; gs/is/gxs are the strides of g, idx and gx
// over `cols`, and g_dim/i_dim/gx_dim their strides along the gathered dim of
// length `len`. The work is split over the columns (the positions other than
// the gathered dim): distinct columns write disjoint elements of gx, and each
// column adds its `len` contributions in order.
template <class T>
void scatter_add_dim(const T* g, const Strides& gs, int64_t g_dim, const int64_t* idx, const Strides& is,
                     int64_t i_dim, T* gx, const Strides& gxs, int64_t gx_dim, const Shape& cols, int64_t len) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, len));
  parallel_runs<3>(
      cols, {gs, is, gxs},
      [&](auto off, int64_t n, auto st) {
        for (int64_t c = 0; c < n; ++c) {
          const T* gp = g + off[0] + c * st[0];
          const int64_t* ip = idx + off[1] + c * st[1];
          T* dp = gx + off[2] + c * st[2];
          for (int64_t j = 0; j < len; ++j) dp[ip[j * i_dim] * gx_dim] += gp[j * g_dim];
        }
      },
      grain);
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void gather(const void* x, const Strides& xs, int64_t xd, const int64_t* idx, const Strides& is, void* o,
            const Shape& shape) {
  indexed_gather<T>(buf<T>(x), xs, xd, idx, is, buf<T>(o), shape);
}
template <class T>
void index_add(const void* g, const int64_t* idx, int64_t outer, int64_t n, int64_t inner, void* gx, int64_t size) {
  index_add_rows<T>(buf<T>(g), idx, outer, n, inner, buf<T>(gx), size);
}
template <class T>
void scatter_add(const void* g, const Strides& gs, int64_t g_dim, const int64_t* idx, const Strides& is, int64_t i_dim,
                 void* gx, const Strides& gxs, int64_t gx_dim, const Shape& cols, int64_t len) {
  scatter_add_dim<T>(buf<T>(g), gs, g_dim, idx, is, i_dim, buf<T>(gx), gxs, gx_dim, cols, len);
}
HKT_CPU_KERNEL(index_check)
HKT_CPU_KERNEL(gather)
HKT_CPU_KERNEL(index_add)
HKT_CPU_KERNEL(scatter_add)

}  // namespace hkt::cpu
