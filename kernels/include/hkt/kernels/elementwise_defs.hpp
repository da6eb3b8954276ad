// Elementwise functions shared by the CPU and CUDA kernels: one list, from
// which the kernels of both backends and their registration, the op names, the
// op functions (hkt/ops/elementwise.hpp), the op-test harness's entries and the
// op page all derive. Adding an elementwise op is one list line and one struct
// (docs/extending.md).
//
// X(name, Struct, dtypes): the op `name` (hkt::name(...), its kernel tables
// "name" and, unary, "name_backward") computed by ew::Struct, with kernels for
// these dtypes (hkt/kernels/op_list.hpp's sets) on every backend.
// Unary ops: f(x), and df(x, y) = dy/dx given the input x and output y.
// Binary ops: f(a, b). Comparisons: f(a, b) -> bool.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define HKT_HD __host__ __device__ inline
#else
#define HKT_HD inline
#endif

namespace hkt::ew {

#define HKT_UNARY_OPS(X)         \
  X(neg, Neg, kFloat)            \
  X(exp, Exp, kFloat)            \
  X(log, Log, kFloat)            \
  X(sqrt, Sqrt, kFloat)          \
  X(rsqrt, Rsqrt, kFloat)        \
  X(tanh, Tanh, kFloat)          \
  X(sigmoid, Sigmoid, kFloat)    \
  X(relu, Relu, kFloat)          \
  X(abs, Abs, kFloat)            \
  X(gelu_tanh, GeluTanh, kFloat) \
  X(gelu_erf, GeluErf, kFloat)   \
  X(softplus, Softplus, kFloat)  \
  X(log1p, Log1p, kFloat)        \
  X(expm1, Expm1, kFloat)

#define HKT_BINARY_OPS(X)   \
  X(add, Add, kNum)         \
  X(sub, Sub, kNum)         \
  X(mul, Mul, kNum)         \
  X(div, Div, kFloat)       \
  X(pow, Pow, kFloat)       \
  X(maximum, Maximum, kNum) \
  X(minimum, Minimum, kNum)

#define HKT_COMPARE_OPS(X) \
  X(eq, Eq, kAll)          \
  X(ne, Ne, kAll)          \
  X(lt, Lt, kAll)          \
  X(le, Le, kAll)          \
  X(gt, Gt, kAll)          \
  X(ge, Ge, kAll)

struct Neg {
  template <class T> HKT_HD static T f(T x) { return -x; }
  template <class T> HKT_HD static T df(T, T) { return T(-1); }
};
struct Exp {
  template <class T> HKT_HD static T f(T x) { return std::exp(x); }
  template <class T> HKT_HD static T df(T, T y) { return y; }
};
struct Log {
  template <class T> HKT_HD static T f(T x) { return std::log(x); }
  template <class T> HKT_HD static T df(T x, T) { return T(1) / x; }
};
struct Sqrt {
  template <class T> HKT_HD static T f(T x) { return std::sqrt(x); }
  template <class T> HKT_HD static T df(T, T y) { return T(0.5) / y; }
};
struct Rsqrt {  // y = x^-1/2, dy/dx = -y^3 / 2
  template <class T> HKT_HD static T f(T x) { return T(1) / std::sqrt(x); }
  template <class T> HKT_HD static T df(T, T y) { return T(-0.5) * y * y * y; }
};
struct Tanh {
  template <class T> HKT_HD static T f(T x) { return std::tanh(x); }
  template <class T> HKT_HD static T df(T, T y) { return T(1) - y * y; }
};
struct Sigmoid {
  template <class T> HKT_HD static T f(T x) {
    return x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
  }
  template <class T> HKT_HD static T df(T, T y) { return y * (T(1) - y); }
};
struct Relu {
  template <class T> HKT_HD static T f(T x) { return x > T(0) ? x : T(0); }
  template <class T> HKT_HD static T df(T x, T) { return x > T(0) ? T(1) : T(0); }
};
struct Abs {
  template <class T> HKT_HD static T f(T x) { return x < T(0) ? -x : x; }
  template <class T> HKT_HD static T df(T x, T) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)); }
};
// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
struct GeluTanh {
  template <class T> HKT_HD static T f(T x) {
    const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(u));
  }
  template <class T> HKT_HD static T df(T x, T) {
    const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
    const T t = std::tanh(u);
    const T du = T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
  }
};
// GELU, exact form: x Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
struct GeluErf {
  template <class T> HKT_HD static T f(T x) { return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476))); }
  template <class T> HKT_HD static T df(T x, T) {
    const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.7071067811865476)));
    const T pdf = T(0.3989422804014327) * std::exp(T(-0.5) * x * x);
    return cdf + x * pdf;
  }
};
// softplus(x) = log(1 + exp(x)), in the stable form max(x, 0) + log1p(exp(-|x|))
// (no overflow for large x, no underflow to log(1) for very negative x). No
// threshold: PyTorch's softplus (beta 1, threshold 20) returns x itself above
// 20, where this differs from it by log1p(exp(-x)) < 2.1e-9 (nothing in
// float32). dy/dx = sigmoid(x).
struct Softplus {
  template <class T> HKT_HD static T f(T x) {
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(x < T(0) ? x : -x));
  }
  template <class T> HKT_HD static T df(T x, T) { return Sigmoid::f(x); }
};
// log(1 + x), accurate for small x; defined for x > -1 (-1 gives -inf).
struct Log1p {
  template <class T> HKT_HD static T f(T x) { return std::log1p(x); }
  template <class T> HKT_HD static T df(T x, T) { return T(1) / (T(1) + x); }
};
// exp(x) - 1, accurate for small x; dy/dx = exp(x) = y + 1.
struct Expm1 {
  template <class T> HKT_HD static T f(T x) { return std::expm1(x); }
  template <class T> HKT_HD static T df(T, T y) { return y + T(1); }
};

struct Add { template <class T> HKT_HD static T f(T a, T b) { return a + b; } };
struct Sub { template <class T> HKT_HD static T f(T a, T b) { return a - b; } };
struct Mul { template <class T> HKT_HD static T f(T a, T b) { return a * b; } };
struct Div { template <class T> HKT_HD static T f(T a, T b) { return a / b; } };
struct Pow { template <class T> HKT_HD static T f(T a, T b) { return std::pow(a, b); } };
struct Maximum { template <class T> HKT_HD static T f(T a, T b) { return a > b ? a : b; } };
struct Minimum { template <class T> HKT_HD static T f(T a, T b) { return a < b ? a : b; } };

struct Eq { template <class T> HKT_HD static bool f(T a, T b) { return a == b; } };
struct Ne { template <class T> HKT_HD static bool f(T a, T b) { return a != b; } };
struct Lt { template <class T> HKT_HD static bool f(T a, T b) { return a < b; } };
struct Le { template <class T> HKT_HD static bool f(T a, T b) { return a <= b; } };
struct Gt { template <class T> HKT_HD static bool f(T a, T b) { return a > b; } };
struct Ge { template <class T> HKT_HD static bool f(T a, T b) { return a >= b; } };

}  // namespace hkt::ew
