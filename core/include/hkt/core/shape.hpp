// Shapes, strides and NumPy broadcasting rules.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace hkt {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

int64_t numel_of(const Shape& s);
Strides contiguous_strides(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3]"

// Wraps a possibly negative dim into [0, ndim); throws naming `op` if out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// NumPy broadcasting of two shapes; throws naming `op` if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides that view a tensor of shape `s` with strides `st` as shape `target`
// (stride 0 on broadcast dims). `s` must broadcast to `target`.
Strides broadcast_strides(const Shape& s, const Strides& st, const Shape& target);

// A reduction's dims split, in order, into the kept dims (red[d] false; they
// form the output) and the reduced dims (red[d] true), with their strides.
struct ReduceDims {
  Shape kept_shape, reduced_shape;
  Strides kept_strides, reduced_strides;
};
ReduceDims split_reduce_dims(const Shape& shape, const Strides& strides, const std::vector<bool>& red);

}  // namespace hkt
