// Learning-rate schedules (formulas in the header).
#include "hkt/models/schedule.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "hkt/core/error.hpp"

namespace hkt::nn {
namespace {

const char* kind_name(LRSchedule::Kind k) {
  switch (k) {
    case LRSchedule::Kind::Constant: return "constant";
    case LRSchedule::Kind::WarmupCosine: return "cosine";
    case LRSchedule::Kind::WarmupLinear: return "linear";
  }
  return "?";
}

}  // namespace

void LRSchedule::validate() const {
  HKT_CHECK(kind == Kind::Constant || kind == Kind::WarmupCosine || kind == Kind::WarmupLinear,
            "LRSchedule: unknown kind ", static_cast<int>(kind));
  HKT_CHECK(warmup_steps >= 0, "LRSchedule (", kind_name(kind), "): warmup_steps must be >= 0, got ", warmup_steps);
  if (kind == Kind::Constant) return;
  HKT_CHECK(total_steps >= 1, "LRSchedule (", kind_name(kind), "): total_steps must be >= 1, got ", total_steps);
  HKT_CHECK(warmup_steps <= total_steps, "LRSchedule (", kind_name(kind), "): warmup_steps (", warmup_steps,
            ") exceeds total_steps (", total_steps, ")");
  HKT_CHECK(std::isfinite(min_factor) && min_factor >= 0.0 && min_factor <= 1.0, "LRSchedule (", kind_name(kind),
            "): min_factor must be in [0, 1], got ", min_factor);
}

double LRSchedule::factor(int64_t step) const {
  validate();
  HKT_CHECK(step >= 0, "LRSchedule::factor: step must be >= 0, got ", step);
  if (step < warmup_steps) return static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (kind == Kind::Constant) return 1.0;
  if (step >= total_steps) return min_factor;
  // warmup_steps <= step < total_steps, so the decay span is >= 1.
  const double p = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  const double shape = kind == Kind::WarmupCosine ? 0.5 * (1.0 + std::cos(std::numbers::pi * p)) : 1.0 - p;
  return min_factor + (1.0 - min_factor) * shape;
}

LRSchedule LRSchedule::constant(int64_t warmup) {
  LRSchedule s{Kind::Constant, warmup, 0, 0.0};
  s.validate();
  return s;
}

LRSchedule LRSchedule::warmup_cosine(int64_t warmup, int64_t total, double min_factor) {
  LRSchedule s{Kind::WarmupCosine, warmup, total, min_factor};
  s.validate();
  return s;
}

LRSchedule LRSchedule::warmup_linear(int64_t warmup, int64_t total, double min_factor) {
  LRSchedule s{Kind::WarmupLinear, warmup, total, min_factor};
  s.validate();
  return s;
}

LRSchedule LRSchedule::parse(const std::string& text) {
  const auto fail = [&](const std::string& why) {
    return Error(str_cat("LRSchedule::parse: '", text, "': ", why,
                         " (expected e.g. 'constant', 'constant:warmup=100' or "
                         "'cosine:warmup=100,total=5000,min=0.1'; kinds constant, cosine, linear)"));
  };
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  LRSchedule s;
  if (kind == "constant") s.kind = Kind::Constant;
  else if (kind == "cosine") s.kind = Kind::WarmupCosine;
  else if (kind == "linear") s.kind = Kind::WarmupLinear;
  else throw fail("unknown kind '" + kind + "'");
  if (colon != std::string::npos) {
    std::stringstream rest(text.substr(colon + 1));
    std::string item;
    while (std::getline(rest, item, ',')) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) throw fail("'" + item + "' is not key=value");
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      size_t used = 0;
      try {
        if (key == "warmup") s.warmup_steps = std::stoll(value, &used);
        else if (key == "total") s.total_steps = std::stoll(value, &used);
        else if (key == "min") s.min_factor = std::stod(value, &used);
        else throw fail("unknown key '" + key + "' (keys: warmup, total, min)");
      } catch (const std::logic_error&) {  // std::invalid_argument, std::out_of_range
        used = 0;
      }
      if (value.empty() || used != value.size()) throw fail("bad value '" + value + "' for " + key);
    }
  }
  try {
    s.validate();
  } catch (const Error& e) {
    throw fail(e.what());
  }
  return s;
}

std::string LRSchedule::str() const {
  std::ostringstream os;
  os.precision(17);
  os << kind_name(kind) << ":warmup=" << warmup_steps;
  if (kind != Kind::Constant) os << ",total=" << total_steps << ",min=" << min_factor;
  return os.str();
}

}  // namespace hkt::nn
