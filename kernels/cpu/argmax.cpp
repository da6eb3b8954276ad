// argmax on the CPU (sig::Argmax): per output, its reduced elements in
// row-major order; the first maximum wins, and the first NaN over any number.
// Exact, so the result does not depend on the thread count.
#include <algorithm>
#include <vector>

#include "hkt/core/shape.hpp"
#include "kernels/backends.hpp"
#include "kernels/cpu/loops.hpp"

namespace hkt::cpu {

template <class T>
void argmax(const void* xv, const Shape& shape, const Strides& strides, const std::vector<bool>& red, int64_t* out) {
  const T* x = kernels::buf<T>(xv);
  const ReduceDims d = split_reduce_dims(shape, strides, red);
  const int64_t n_in = numel_of(d.reduced_shape), n_out = numel_of(d.kept_shape);
  if (n_out == 0) return;
  const Layout<1> in = coalesce<1>(d.reduced_shape, {d.reduced_strides});
  // The position of the first NaN, else of the first maximum, among the reduced elements at base.
  auto first_max = [&](const T* base) {
    if (n_in == 0) return int64_t{0};
    int64_t best = 0, i = 0;
    T top = base[0];
    bool nan = top != top;
    for_each_run<1>(in, 0, n_in, [&](auto off, int64_t n, auto st) {
      for (int64_t j = 0; j < n && !nan; ++j, ++i) {
        const T v = base[off[0] + j * st[0]];
        if (v != v) best = i, nan = true;
        else if (v > top) best = i, top = v;
      }
    });
    return best;
  };
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n_in));
  parallel_runs<2>(
      d.kept_shape, {d.kept_strides, contiguous_strides(d.kept_shape)},
      [&](auto off, int64_t n, auto st) {
        for (int64_t j = 0; j < n; ++j) out[off[1] + j * st[1]] = first_max(x + off[0] + j * st[0]);
      },
      grain);
}

HKT_CPU_KERNEL(argmax)

}  // namespace hkt::cpu
