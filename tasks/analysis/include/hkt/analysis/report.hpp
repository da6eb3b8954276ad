// The analysis of a trained classifier (docs/analysis.md): per layer, head and
// level, the non-Gaussianity of the scores (Mardia's b2, univariate excess
// kurtosis), the spectra of the symmetrised bilinear forms and of the
// symmetrised combined score matrix, the reciprocal / directional split, the
// level weights lambda and gates beta, Proposition 3.1's PSD condition per
// head ("psd"), the kurtosis at several dimensions ("kurtosis_dims"), and the
// score cost next to measured time. Everything is computed in float64.
// approx.hpp has the error of a level sweep against a target.
//
//   LoadedModel m = load_trained("runs/listops-hkt");     // run folder, checkpoint folder or .safetensors
//   Report r = analyze(*m.model, sample, opts);
//   write_report("runs/listops-hkt/analysis", r);          // report.json + *.csv, atomically
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hkt/models/classifier.hpp"
#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/train.hpp"

namespace hkt::analysis {

struct AnalysisOptions {
  int64_t window = 16;          // p: score vectors are S_l[i, 0:p] (capped by the median sequence length at level l)
  int64_t eig_samples = 4;      // examples whose symmetrised combined score matrix is diagonalised
  int64_t batch_size = 4;       // examples per forward pass (S_hier of a batch is B x H x T x T)
  int64_t bins = 40;            // histogram bins
  bool cost = true;             // time HKT against MHA (section "cost")
  int64_t cost_max_levels = 4;  // L = 1..this (at least the model's L)
  int64_t cost_batch = 4;
  int64_t cost_reps = 3;        // timed forward passes (the fastest is reported), after one warm-up
  // Kurtosis at several dimensions (kurtosis_dims.csv): Mardia's normalised b2 of the score rows in
  // these key windows, and of the full row (p = median len_l) when p <= full_row_max.
  std::vector<int64_t> kurtosis_windows = {4, 16, 64};
  bool full_row = true;
  int64_t full_row_max = 256;
};

// A CSV table of numbers (integers are written without a decimal point, NaN as "nan").
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  std::string csv() const;
};

struct Report {
  nlohmann::json json;                  // report.json
  std::map<std::string, Table> tables;  // file name (e.g. "kurtosis.csv") -> table
  // The sampled inputs the report was computed on (sample.safetensors: "inputs" and "valid" [N, T]),
  // so that it can be recomputed independently (tests/reference/check_analysis.py); empty: not written.
  std::vector<std::pair<std::string, Tensor>> sample;
};

// The inputs and validity mask of every example of `data`, for Report::sample.
std::vector<std::pair<std::string, Tensor>> sample_tensors(const tasks::Dataset& data);

// Analyses `model` on every example of `data` (take a sample first; tasks::sample).
Report analyze(nn::SequenceClassifier& model, const tasks::Dataset& data, const AnalysisOptions& opt = {});

// Writes report.json, the tables and sample.safetensors (when Report::sample is set) into `dir`: first into a sibling temporary
// folder, then renamed over `dir` (an existing `dir` is replaced), so that a
// failure never leaves a half-written report.
void write_report(const std::string& dir, const Report& r);

// A trained model from a run folder (best.safetensors, or checkpoint/model.safetensors with
// weights = "final"), a checkpoint folder (model.safetensors) or a .safetensors file written by
// hkt (its metadata must hold "hkt.model_config"). `train` is the run's TrainConfig when known
// (config.json of a run folder, or the "hkt.config" metadata of a checkpoint).
struct LoadedModel {
  std::unique_ptr<nn::SequenceClassifier> model;
  nn::ClassifierConfig config;
  std::optional<tasks::TrainConfig> train;
  std::string weights;  // the .safetensors file read
  std::string run_dir;  // the run folder it belongs to ("" for a checkpoint folder or a loose file)
  std::map<std::string, std::string> metadata;
};
LoadedModel load_trained(const std::string& path, const std::string& weights = "best");

}  // namespace hkt::analysis
