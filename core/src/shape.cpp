#include "hkt/core/shape.hpp"

#include "hkt/core/error.hpp"

namespace hkt {

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = ndim > 0 ? ndim : 1;
  HKT_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " is out of range for a tensor with ", ndim,
            " dims (expected ", -n, " .. ", n - 1, ")");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    HKT_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
              " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Strides broadcast_strides(const Shape& s, const Strides& st, const Shape& target) {
  Strides out(target.size(), 0);
  const size_t lead = target.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) out[lead + i] = (s[i] == 1 && target[lead + i] != 1) ? 0 : st[i];
  return out;
}

ReduceDims split_reduce_dims(const Shape& shape, const Strides& strides, const std::vector<bool>& red) {
  ReduceDims r;
  for (size_t d = 0; d < shape.size(); ++d) {
    (red[d] ? r.reduced_shape : r.kept_shape).push_back(shape[d]);
    (red[d] ? r.reduced_strides : r.kept_strides).push_back(strides[d]);
  }
  return r;
}

}  // namespace hkt
