// The op-test harness (op_harness.hpp): the checks, run on every case of every entry.
#include "helpers/op_harness.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

namespace hkt::harness {
namespace {

struct Run {
  Tensor y;                   // on the CPU
  std::vector<Tensor> grads;  // per input (undefined: none), on the CPU
};

std::vector<double> host(const Tensor& t) {
  return to_dtype(to_device(t, Device::cpu()), DType::Float64).to_vector<double>();
}

// Empty when a and b agree within tol (|a - b| <= tol (1 + |b|); tol 0: the same bits).
std::string compare(const Tensor& a, const Tensor& b, double tol) {
  if (a.defined() != b.defined()) return "one side has no tensor";
  if (!a.defined()) return "";
  if (a.shape() != b.shape()) return "shapes differ: " + shape_str(a.shape()) + " vs " + shape_str(b.shape());
  const std::vector<double> x = host(a), y = host(b);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool same = x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]));
    const bool ok = same || (tol > 0 && std::abs(x[i] - y[i]) <= tol * (1.0 + std::abs(y[i])));
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os.precision(17);
  os << bad << " of " << x.size() << " elements differ; first at " << first << ": " << x[first] << " vs "
     << y[first];
  return os.str();
}

std::vector<Tensor> make_inputs(const Case& c, DType dt, Device dev, uint64_t seed, bool grad) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < c.args.size(); ++i) in.push_back(make(c.args[i], dt, dev, seed + 7919 * i, grad));
  return in;
}

Run evaluate(const Case& c, DType dt, Device dev, uint64_t seed, bool differentiable) {
  const std::vector<Tensor> in = make_inputs(c, dt, dev, seed, differentiable);
  Run r;
  const Tensor y = c.fn(in);
  r.y = to_device(y.detach(), Device::cpu());
  r.grads.resize(in.size());
  if (!differentiable || !is_floating(y.dtype()) || !y.requires_grad()) return r;
  const Tensor w = make(Arg{y.shape()}, y.dtype(), dev, seed ^ 0x9E3779B97F4A7C15ull, false);
  sum(y * w).backward();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].requires_grad() && in[i].grad().defined()) r.grads[i] = to_device(in[i].grad(), Device::cpu());
  return r;
}

// Empty when the two runs agree within tol.
std::string compare_runs(const Run& a, const Run& b, double tol) {
  if (std::string m = compare(a.y, b.y, tol); !m.empty()) return "output: " + m;
  for (size_t i = 0; i < a.grads.size(); ++i)
    if (std::string m = compare(a.grads[i], b.grads[i], tol); !m.empty())
      return "gradient of input " + std::to_string(i) + ": " + m;
  return "";
}

struct Report {
  std::vector<std::string> failures;
  void fail(const std::string& op, const std::string& where, const std::string& what) {
    failures.push_back(op + " [" + where + "]: " + what);
    std::cerr << "FAIL " << failures.back() << "\n";
  }
};

// Runs one check, turning an exception into a failure; returns whether it passed.
template <class F>
bool check(Report& rep, const std::string& op, const std::string& where, F&& f) {
  try {
    const std::string m = f();
    if (m.empty()) return true;
    rep.fail(op, where, m);
  } catch (const std::exception& e) {
    rep.fail(op, where, std::string("threw: ") + e.what());
  }
  return false;
}

}  // namespace

int64_t dim(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

Shape shape(std::mt19937_64& rng, size_t rank, int64_t lo, int64_t hi) {
  Shape s;
  for (size_t i = 0; i < rank; ++i) s.push_back(dim(rng, lo, hi));
  return s;
}

Tensor make(const Arg& a, DType floating, Device dev, uint64_t seed, bool grad) {
  Shape storage = a.shape;
  const bool views = !a.shape.empty();
  if (views && a.layout == Layout::Transposed) std::reverse(storage.begin(), storage.end());
  if (views && a.layout == Layout::Sliced) storage.back() *= 2;
  if (views && a.layout == Layout::Expanded) storage[0] = 1;
  int64_t n = 1;
  for (int64_t d : storage) n *= d;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(a.lo, a.hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = (a.integer || a.index) ? std::floor(u(rng)) : u(rng);
  Tensor t = to_device(to_dtype(from_vector(v, storage), a.index ? DType::Int64 : floating), dev);
  if (views && a.layout == Layout::Transposed) {
    std::vector<int64_t> p;
    for (int64_t d = static_cast<int64_t>(storage.size()) - 1; d >= 0; --d) p.push_back(d);
    t = permute(t, p);
  } else if (views && a.layout == Layout::Sliced) {
    t = slice(t, -1, 0, storage.back(), 2);
  } else if (views && a.layout == Layout::Expanded) {
    t = expand(t, a.shape);
  }
  const bool leaf = grad && a.grad && !a.index && a.layout != Layout::Expanded;
  return leaf ? t.detach().set_requires_grad(true) : t.detach();
}

std::string expect(const Tensor& t, const Shape& shape, const std::vector<double>& values, double tol) {
  if (!t.defined()) return "no tensor (expected " + shape_str(shape) + ")";
  if (t.shape() != shape) return "shape " + shape_str(t.shape()) + ", expected " + shape_str(shape);
  return compare(t, from_vector(values, shape), tol);
}

int run(const std::vector<OpEntry>& entries, const Options& opt) {
  Report rep;
  const bool device = cuda_is_available();
  std::mt19937_64 rng(opt.seed);
  std::ostringstream table;
  const std::vector<OpSpec> specs = registered_ops();
  size_t total_cases = 0, total_checks = 0;
  for (const OpEntry& e : entries) {
    const std::vector<Case> cases = e.cases ? e.cases(rng) : std::vector<Case>{};
    if (cases.empty()) rep.fail(e.op, "cases", "the op has no cases");
    size_t checks = 0;
    uint64_t seed = opt.seed;
    // The device comparison needs a float32 CUDA kernel for every listed kernel (an
    // outside op may bring CPU kernels only; the completeness check says what is required).
    bool on_device = true;
    for (const std::string& k : e.kernels) {
      const auto spec = std::find_if(specs.begin(), specs.end(), [&](const OpSpec& o) { return o.name() == k; });
      if (spec == specs.end()) {
        rep.fail(e.op, "kernels", "lists '" + k + "', which is not a registered op");
        on_device = false;
        continue;
      }
      bool has = spec->cuda != 0;  // the dtypes its spec requires of CUDA (none: a CPU-only op)
      for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Bool})
        if (kernels::contains(spec->cuda, dt)) has = has && spec->table->has(DeviceType::CUDA, dt);
      on_device = on_device && has;
    }
    for (const Case& c : cases) {
      seed += 1000003;
      const bool any_grad = std::any_of(c.args.begin(), c.args.end(), [](const Arg& a) {
        return a.grad && !a.index && a.layout != Layout::Expanded;  // the inputs make() gives a gradient
      });
      if (e.differentiable && c.gradcheck && any_grad) {
        ++checks;
        check(rep, e.op, c.label + ", float64 gradcheck", [&] {
          gradcheck(c.fn, make_inputs(c, DType::Float64, Device::cpu(), seed, true), e.grad);
          return std::string();
        });
      }
      ++checks;
      check(rep, e.op, c.label + ", float32 vs float64", [&] {
        return compare_runs(evaluate(c, DType::Float32, Device::cpu(), seed, e.differentiable),
                            evaluate(c, DType::Float64, Device::cpu(), seed, e.differentiable), e.tol32);
      });
      ++checks;
      check(rep, e.op, c.label + ", 1 vs 2 threads", [&] {
        const int prev = get_num_threads();
        set_num_threads(1);
        const Run one = evaluate(c, DType::Float32, Device::cpu(), seed, e.differentiable);
        set_num_threads(2);
        const Run two = evaluate(c, DType::Float32, Device::cpu(), seed, e.differentiable);
        set_num_threads(prev);
        return compare_runs(one, two, 0.0);
      });
      if (device && on_device) {
        ++checks;
        check(rep, e.op, c.label + ", cuda vs cpu", [&] {
          return compare_runs(evaluate(c, DType::Float32, Device::cuda(), seed, e.differentiable),
                              evaluate(c, DType::Float32, Device::cpu(), seed, e.differentiable), e.tol_device);
        });
      }
    }
    if (e.bad_input) {
      ++checks;
      check(rep, e.op, "bad input", [&]() -> std::string {
        try {
          e.bad_input();
        } catch (const Error& err) {
          if (std::string(err.what()).find(e.bad_needle) != std::string::npos) return "";
          return "the error does not say '" + e.bad_needle + "': " + err.what();
        }
        return "no hkt::Error (expected one saying '" + e.bad_needle + "')";
      });
    } else {
      rep.fail(e.op, "bad input", "the entry has no bad-input case");
    }
    if (e.examples) {
      ++checks;
      check(rep, e.op, "worked examples", e.examples);
    }
    total_cases += cases.size();
    total_checks += checks;
    table << "  " << e.op << ": " << cases.size() << " cases, " << checks << " checks"
          << (device && !on_device ? " (no cuda kernels: not compared on the device)" : "") << "\n";
  }
  if (opt.require_every_registered_op) {
    for (const OpSpec& spec : specs) {
      const bool covered = std::any_of(entries.begin(), entries.end(), [&](const OpEntry& e) {
        return std::find(e.kernels.begin(), e.kernels.end(), spec.name()) != e.kernels.end();
      });
      if (!covered) rep.fail(spec.name(), "cases", "on the op list but no harness entry exercises it");
    }
  }
  std::cout << "op harness (" << (device ? "cpu and cuda" : "cpu only: no cuda device") << "):\n"
            << table.str() << "checked " << entries.size() << " ops, " << total_cases << " cases, "
            << total_checks << " checks; " << rep.failures.size() << " failures\n";
  return static_cast<int>(rep.failures.size());
}

}  // namespace hkt::harness
