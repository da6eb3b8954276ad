// What hkt-analyze's subcommands share (hkt_analyze.cpp, hkt_analyze_theory.cpp): the sample
// options and the number format of the console summaries.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

// --split, --samples, --sample-seed: the seeded sample of a split that the commands analyse
// (defined in hkt_analyze.cpp).
void add_sample_options(CLI::App& app, std::string& split, int64_t& samples, uint64_t& sample_seed);

// A report number for the console: 4 significant digits, "n/a" when it is not a number.
inline std::string fmt(const nlohmann::json& v) {
  if (!v.is_number()) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}
