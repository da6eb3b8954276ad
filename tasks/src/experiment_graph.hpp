// The references between experiment files ("tuning": {"experiment": FILE} and a
// model's "shared_with": FILE), checked as one graph before any referenced file
// is read as an experiment: a cycle (a.json -> b.json -> a.json, through either
// kind of reference) is refused, naming it, instead of recursing without end.
// Internal to tasks/src (experiment.cpp).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hkt::tasks::detail {

// The limits of the graph: files reachable from one experiment, and the depth of
// a chain of references.
inline constexpr int kMaxExperimentFiles = 256;
inline constexpr int kMaxReferenceDepth = 32;

// Follows every reference of `root` (the experiment's parsed JSON; `root_file`
// its path, "" when it has none; `base_dir` where its relative references
// start) through the files they name; hkt::Error("experiment: the files refer
// to each other in a cycle: a.json -> (\"tuning\") b.json -> (model \"m\"'s
// \"shared_with\") a.json") for a cycle, or when over the limits. Files that
// cannot be read or parsed are left for the experiment's own reader to report.
void check_reference_graph(const nlohmann::ordered_json& root, const std::string& root_file,
                           const std::string& base_dir);

// Nesting of Experiment::from_json within itself (a referenced file read while
// reading another): a backstop that refuses more than kMaxReferenceDepth levels.
class ExperimentDepth {
 public:
  ExperimentDepth();
  ~ExperimentDepth();
  ExperimentDepth(const ExperimentDepth&) = delete;
  ExperimentDepth& operator=(const ExperimentDepth&) = delete;
  bool outermost() const { return level_ == 1; }

 private:
  int level_;
};

}  // namespace hkt::tasks::detail
