// Small helpers the benchmark executables share (tools/bench_attention.cpp, tools/bench_step.cpp).
#pragma once
#include <algorithm>
#include <string>
#include <unistd.h>
#include <vector>

#include "hkt/models/classifier.hpp"

namespace hkt::bench {

// The classifier a benchmark's training step trains (hkt-bench-attention --step) and whose FLOPs
// hkt-bench-step counts: `preset` at length T, token inputs from a vocabulary of 256, 10 classes.
inline nn::ClassifierConfig step_config(const std::string& preset, int64_t T) {
  nn::ClassifierConfig cfg = nn::ClassifierConfig::preset(preset);
  cfg.vocab = 256;
  cfg.classes = 10;
  cfg.max_len = T;
  return cfg;
}

// This executable's path (fallback: `fallback`, found on PATH).
inline std::string self_exe(const char* fallback) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return fallback;
  buf[n] = 0;
  return buf;
}

// The median (the mean of the middle two for an even count; 0 for none).
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace hkt::bench
