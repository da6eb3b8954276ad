// The op-test harness: every op on the list (hkt::registered_ops(), the
// library's and any registered from outside) put through the same checks on
// the cases its entry generates. Plain C++ (no test framework), so that an
// outside project can compile tests/helpers/op_harness.cpp and run it on its
// own ops (tests/consumer does).
//
// Per case (inputs built in each dtype from the same values and layout):
//   - float64 central-difference gradient check (hkt::gradcheck);
//   - float32 forward and backward against float64;
//   - float32 with 1 and with 2 threads: the same bits;
//   - on the CUDA device (real, or the tests' emulated one) against the CPU,
//     where a device is available and every kernel the entry lists has the
//     CUDA kernels its spec requires (an op whose spec requires none is
//     CPU-only);
// and per op a bad input that must raise an hkt::Error containing a given text,
// and its worked examples (values worked out by hand: ties, edge cases), if any.
// run() prints one line per op (its cases and checks) and the totals, and
// counts as failures an op with no cases and, when asked, a registered kernel
// op that no entry covers.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hkt/hkt.hpp"
#include "hkt/kernels/registry.hpp"

namespace hkt::harness {

// How an input is laid out in memory (its logical shape is Arg::shape).
enum class Layout {
  Contiguous,
  Transposed,  // a permutation of a contiguous tensor of the reversed shape
  Sliced,      // every other element of the last dim of a tensor twice as wide
  Expanded,    // dim 0 broadcast (stride 0) from size 1
};

struct Arg {
  Shape shape;
  Layout layout = Layout::Contiguous;
  double lo = -1.5, hi = 1.5;  // uniform values in [lo, hi)
  bool integer = false;        // floating values rounded to integers (exact in every dtype)
  bool index = false;          // an int64 tensor of values in [lo, hi) (no gradient)
  bool grad = true;            // floating: requires grad (not for a condition, say)
};

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Case {
  std::string label;
  std::vector<Arg> args;
  Fn fn;
  bool gradcheck = true;  // false for cases too large for central differences
};

struct OpEntry {
  std::string op;                    // the public op, for the report
  std::vector<std::string> kernels;  // the list entries its cases exercise
  std::function<std::vector<Case>(std::mt19937_64& rng)> cases;
  bool differentiable = true;
  double tol32 = 2e-4;                   // float32 vs float64: |a - b| <= tol (1 + |b|)
  double tol_device = 1e-4;              // device vs CPU (float32), the same form
  std::function<void()> bad_input;       // must throw hkt::Error ...
  std::string bad_needle;                // ... whose message contains this
  std::function<std::string()> examples;  // worked examples: "" when all hold, else what differs
  GradcheckOptions grad;
};

struct Options {
  bool require_every_registered_op = false;  // fail on a registered op no entry covers
  uint64_t seed = 20240601;
};

// Random dims and shapes for the case generators.
int64_t dim(std::mt19937_64& rng, int64_t lo, int64_t hi);  // in [lo, hi]
Shape shape(std::mt19937_64& rng, size_t rank, int64_t lo = 1, int64_t hi = 5);

// The tensor of an Arg in a floating dtype on a device (seeded by seed);
// floating ones require grad when grad is set.
Tensor make(const Arg& a, DType floating, Device dev, uint64_t seed, bool grad);

// For worked examples: "" when t (any dtype, any device) has this shape and
// these values (exactly, or within tol), else what differs.
std::string expect(const Tensor& t, const Shape& shape, const std::vector<double>& values, double tol = 0.0);

// Runs every check of every entry; prints the report; returns the number of failures.
int run(const std::vector<OpEntry>& entries, const Options& opt = {});

}  // namespace hkt::harness
