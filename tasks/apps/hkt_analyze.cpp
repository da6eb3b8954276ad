// hkt-analyze: the analysis of a trained classifier (docs/analysis.md).
//
//   hkt-analyze runs/listops-hkt --samples 64                 # -> runs/listops-hkt/analysis/
//   hkt-analyze runs/x/checkpoint --task listops --out /tmp/a # a checkpoint folder, the task named
//   hkt-plot --analysis runs/listops-hkt/analysis --out plots # the figures
//   hkt-analyze approx --target runs/mha runs/L1 runs/L2 runs/L3 --out runs/approx   # error against L
//   hkt-analyze theory runs/listops-mha --ranks 1,4,8     # Proposition 4.5 and Theorem 4.3 (hkt_analyze_theory.cpp)
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "analyze_common.hpp"
#include "hkt/analysis/approx.hpp"
#include "hkt/analysis/report.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/registry.hpp"
#include "cli.hpp"

namespace fs = std::filesystem;
using hkt::analysis::AnalysisOptions;

const CLI::Range kPositive(int64_t{1}, int64_t{1} << 40), kNonNegative(int64_t{0}, int64_t{1} << 40);

// --split, --samples, --sample-seed: the seeded sample of a split that both commands analyse.
void add_sample_options(CLI::App& app, std::string& split, int64_t& samples, uint64_t& sample_seed) {
  app.add_option("--split", split, "which split to sample: val, test or train")
      ->check(CLI::IsMember({"val", "test", "train"}))
      ->capture_default_str();
  app.add_option("--samples", samples, "examples drawn from the split (seeded)")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--sample-seed", sample_seed, "seed of the sample")->capture_default_str();
}

namespace {

void print_summary(const hkt::analysis::Report& r, const std::string& out) {
  const auto& j = r.json;
  std::cout << "model " << j["model_config"]["attention"].get<std::string>() << ", " << j["data"]["examples"]
            << " examples of " << j["data"]["name"].get<std::string>() << "\n"
            << "level | kappa = b2/(p(p+2)) | excess kurtosis | neg. eig(Ms) per head / layer | ||Ma||/||M|| per "
               "head / layer | lambda\n";
  for (const auto& e : j["by_level"])
    std::cout << e["level"] << " | " << fmt(e["kappa_mean"]) << " | " << fmt(e["excess_kurtosis_mean"]) << " | "
              << fmt(e["frac_negative_mean"]) << " / " << fmt(e["frac_negative_layer_mean"]) << " | "
              << fmt(e["directional_share_mean"]) << " / " << fmt(e["directional_share_layer_mean"]) << " | "
              << fmt(e["lambda_mean"]) << "\n";
  if (j["cost"].is_object()) {
    std::cout << "L | score FLOP ratio | measured time ratio HKT/MHA\n";
    for (const auto& c : j["cost"]["rows"])
      std::cout << c["levels"] << " | " << fmt(c["flop_ratio"]) << " | " << fmt(c["time_ratio"]) << "\n";
  }
  const auto& psd = j["psd"];
  std::cout << "Proposition 3.1 (per layer and head): condition (every Ms_{l,h} PSD) holds for "
            << psd["condition_holds"] << " of " << psd["pairs"] << "; symmetrised combined scores PSD (min eig >= -"
            << fmt(psd["tolerance"]) << " max|eig|) for " << psd["combined_psd"] << " of " << psd["pairs"];
  if (psd["inconsistent"].get<int64_t>() > 0) std::cout << "; " << psd["inconsistent"] << " CONTRADICT it";
  std::cout << "\nkurtosis per level (means over layers and heads), each with its normalisation and Gaussian value:\n";
  for (const auto& e : j["kurtosis_dims"]["by_level"]) {
    std::cout << "level " << e["level"] << ": per entry m4/m2^2 = " << fmt(e["entry_kurtosis_mean"])
              << " (Gaussian 3), excess m4/m2^2-3 = " << fmt(e["entry_excess_kurtosis_mean"])
              << " (Gaussian 0); per score row, Mardia b2/(r(r+2)) (Gaussian 1):";
    for (const auto& w : e["windows"])
      std::cout << " " << (w["window"].is_string() ? std::string("full row") : "window " + w["window"].dump())
                << " (mean p " << fmt(w["p_mean"]) << ") " << fmt(w["kappa_mean"]) << ";";
    std::cout << "\n";
  }
  std::cout << "(means over layers and heads; written to " << out << "/report.json and "
            << j["tables"].size() << " CSV files)\n";
}

// hkt-analyze approx: the approximation error of a level sweep against a target (approx.hpp).
int approx_main(int argc, char** argv) {
  CLI::App app{"hkt-analyze approx: for trained runs of a level sweep (HKT with L = 1, 2, ...), the relative "
               "Frobenius error of each run's combined score matrices to a target's (a trained MHA run of the same "
               "task, or the largest-L run) on the same inputs, per L, and a log-linear fit of whether it falls "
               "geometrically in L (slope with its 95% interval). Writes OUT/report.json, approx.csv and "
               "approx_fit.csv (docs/analysis.md).",
               "hkt-analyze approx"};
  std::string target, out, data_dir, split = "val", weights = "best";
  std::vector<std::string> runs;
  int64_t samples = 16, batch_size = 4, threads = 0, seq_len = 0;
  uint64_t sample_seed = 0;
  app.add_option("runs", runs, "run folders (or checkpoints / .safetensors files) of the level sweep")->required();
  app.add_option("--target", target, "the run whose scores are the target")->required();
  app.add_option("--out", out, "output folder (replaced atomically if it exists)")->required();
  app.add_option("--weights", weights, "for run folders: best or final")
      ->check(CLI::IsMember({"best", "final"}))
      ->capture_default_str();
  app.add_option("--data-dir", data_dir, "data folder for file-based tasks (default: the target's)");
  app.add_option("--seq-len", seq_len, "sequence length (default: the target's)")->check(kNonNegative);
  add_sample_options(app, split, samples, sample_seed);
  app.add_option("--batch-size", batch_size, "examples per forward pass")->check(kPositive)->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (0 = all cores or HKT_NUM_THREADS)")->check(kNonNegative);
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;
  try {
    if (threads > 0) hkt::set_num_threads(static_cast<int>(threads));
    for (const std::string& p : runs) HKT_CHECK(fs::exists(p), "'", p, "' not found");
    HKT_CHECK(fs::exists(target), "--target '", target, "' not found");
    hkt::analysis::LoadedModel tm = hkt::analysis::load_trained(target, weights);
    HKT_CHECK(tm.train.has_value(), "the target '", tm.weights, "' does not say which task it was trained on");
    hkt::tasks::TaskOptions topts = tm.train->data;
    if (!data_dir.empty()) topts.data_dir = data_dir;
    if (seq_len > 0) topts.seq_len = seq_len;
    std::vector<hkt::analysis::LoadedModel> lms;
    for (const std::string& p : runs) {
      lms.push_back(hkt::analysis::load_trained(p, weights));
      const auto& tr = lms.back().train;
      HKT_CHECK(!tr || tr->task == tm.train->task, "'", p, "' was trained on ", tr ? tr->task : "", ", the target on ",
                tm.train->task, ": compare runs of one task");
    }
    const hkt::tasks::Splits splits = hkt::tasks::load_task(tm.train->task, topts);
    const hkt::tasks::Dataset& whole = split == "val" ? splits.val : split == "test" ? splits.test : splits.train;
    const hkt::tasks::Dataset data = hkt::tasks::sample(whole, samples, sample_seed);
    std::vector<hkt::analysis::ApproxModel> models;
    // A run that is the target (the same weights file) is compared as the target itself: error 0, not fitted.
    auto same = [](const std::string& a, const std::string& b) {
      std::error_code ec;
      return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
    };
    for (size_t k = 0; k < lms.size(); ++k)
      models.push_back({runs[k], same(lms[k].weights, tm.weights) ? tm.model.get() : lms[k].model.get()});
    hkt::analysis::Report r = hkt::analysis::approx_report(models, {target, tm.model.get()}, data, batch_size);
    r.json["source"] = {{"task", tm.train->task}, {"split", split}, {"sample_seed", sample_seed},
                        {"weights", weights}};
    r.json["target"]["weights"] = tm.weights;
    for (size_t k = 0; k < lms.size(); ++k) r.json["runs"][k]["weights"] = lms[k].weights;
    hkt::analysis::write_report(out, r);
    const auto& j = r.json;
    std::cout << "target " << target << " (" << j["target"]["attention"].get<std::string>() << "), "
              << j["data"]["examples"] << " examples of " << j["data"]["name"].get<std::string>()
              << "\nrun | L | rel. Frobenius error of the row-centred scores (heads matched) | with a scalar per head\n";
    for (const auto& e : j["runs"])
      std::cout << e["label"].get<std::string>() << " | " << (e["levels"].is_null() ? "mha" : e["levels"].dump())
                << " | " << fmt(e["rel_error"]) << " | " << fmt(e["rel_error_fitted"])
                << (e["is_target"].get<bool>() ? " (the target)" : "") << "\n";
    for (const auto& e : j["ratios"])
      std::cout << "L " << fmt(e["from_levels"]) << " -> " << fmt(e["to_levels"]) << ": residual ratio per level "
                << fmt(e["ratio_per_level"]) << " (fitted " << fmt(e["ratio_per_level_fitted"]) << ")\n";
    for (const char* k : {"fit", "fit_fitted"}) {
      const auto& f = j[k];
      std::cout << k << ": log(err) = a + b L over " << f["points"] << " runs: b = " << fmt(f["slope"]);
      if (f.contains("slope_95"))
        std::cout << " [" << fmt(f["slope_95"][0]) << ", " << fmt(f["slope_95"][1]) << "], factor per level "
                  << fmt(f["factor"]) << " [" << fmt(f["factor_95"][0]) << ", " << fmt(f["factor_95"][1]) << "]";
      std::cout << ": " << f["verdict"].get<std::string>() << "\n";
    }
    std::cout << "(written to " << out << ")\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hkt-analyze approx: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int theory_main(int argc, char** argv);  // hkt_analyze_theory.cpp

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "approx") return approx_main(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "theory") return theory_main(argc - 1, argv + 1);
  CLI::App app{
      "hkt-analyze: analyse a trained classifier on a sample of its task's data: Mardia's kurtosis of the scores, "
      "spectra of the symmetrised bilinear forms Ms_l and of the combined score matrix, the reciprocal / "
      "directional split ||Ms_l||, ||Ma_l||, the level weights lambda and gates beta, Proposition 3.1's PSD "
      "condition per head (psd.csv), the kurtosis at several dimensions (kurtosis_dims.csv) and the score cost "
      "next to measured time. 'hkt-analyze approx --help': the approximation error of a level sweep. Writes OUT/report.json and CSV tables (docs/analysis.md explains each quantity); "
      "hkt-plot draws them.",
      "hkt-analyze"};
  std::string path, out, task, data_dir, split = "val", weights = "best";
  int64_t seq_len = 0, samples = 64, threads = 0;
  uint64_t sample_seed = 0;
  AnalysisOptions opt;
  bool no_cost = false, no_full_row = false;
  app.add_option("path", path,
                 "a run folder of hkt-train (best.safetensors, or checkpoint/ with --weights final), a checkpoint "
                 "folder (model.safetensors) or a .safetensors file written by hkt")
      ->required();
  app.add_option("--out", out, "output folder (default PATH/analysis, or FILE.analysis for a file); replaced "
                               "atomically if it exists");
  app.add_option("--weights", weights, "for a run folder: best (best.safetensors) or final (checkpoint/)")
      ->check(CLI::IsMember({"best", "final"}))
      ->capture_default_str();
  app.add_option("--task", task, "task of the data (default: the run's task); see hkt-train --help");
  app.add_option("--data-dir", data_dir, "data folder for file-based tasks (default: the run's)");
  app.add_option("--seq-len", seq_len, "sequence length of generated/text tasks (default: the run's)")
      ->check(kNonNegative);
  add_sample_options(app, split, samples, sample_seed);
  app.add_option("--window", opt.window,
                 "p: the score vectors are S_l[i, 0:p] (capped by the median sequence length at each level)")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--kurtosis-windows", opt.kurtosis_windows,
                 "key windows of the kurtosis at several dimensions (kurtosis_dims.csv)")
      ->check(kPositive)
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--no-full-row", no_full_row, "skip the full-row kurtosis (p = median len_l)");
  app.add_option("--full-row-max", opt.full_row_max, "widest full row whose kurtosis is computed")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--eig-samples", opt.eig_samples, "examples whose combined score matrix is diagonalised")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--batch-size", opt.batch_size, "examples per forward pass")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--bins", opt.bins, "histogram bins")->check(kPositive)->capture_default_str();
  app.add_flag("--no-cost", no_cost, "skip the timing of HKT against MHA");
  app.add_option("--cost-levels", opt.cost_max_levels, "time HKT with L = 1..this (at least the model's L)")
      ->check(CLI::Range(1, 12))
      ->capture_default_str();
  app.add_option("--cost-batch", opt.cost_batch, "batch of the timed forward passes")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--cost-reps", opt.cost_reps, "timed passes per model (the fastest counts)")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (0 = all cores or HKT_NUM_THREADS)")
      ->check(kNonNegative);
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;
  opt.cost = !no_cost;
  opt.full_row = !no_full_row;

  try {
    if (threads > 0) hkt::set_num_threads(static_cast<int>(threads));
    if (!fs::exists(path)) {
      std::cerr << "hkt-analyze: error: '" << path << "' not found\n";
      return 2;
    }
    // A model that cannot be loaded (damaged, non-finite, hostile metadata) is bad input: exit 2.
    hkt::analysis::LoadedModel lm;
    try {
      lm = hkt::analysis::load_trained(path, weights);
    } catch (const std::exception& e) {
      std::cerr << "hkt-analyze: error: " << e.what() << "\n";
      return 2;
    }
    hkt::tasks::TaskOptions topts;
    std::string task_name = task;
    if (lm.train) {
      if (task.empty() || task == lm.train->task) topts = lm.train->data;
      if (task.empty()) task_name = lm.train->task;
    }
    if (task_name.empty()) {
      std::cerr << "hkt-analyze: '" << lm.weights
                << "' does not say which task it was trained on; give --task (one of: synthetic, listops, ...)\n";
      return 2;
    }
    try {
      hkt::tasks::check_task_name(task_name, "hkt-analyze: error: --task: ");
    } catch (const hkt::Error& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
    if (!data_dir.empty()) topts.data_dir = data_dir;
    if (seq_len > 0) topts.seq_len = seq_len;
    // Data that cannot be read or does not fit the model is bad input too: exit 2.
    hkt::tasks::Dataset data;
    // Progress: the data and the analysis can each take a while (a large task, the timed passes).
    const auto t0 = std::chrono::steady_clock::now();
    const auto since = [&t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    std::cout << "hkt-analyze: reading the " << split << " split of task " << task_name << " ..." << std::endl;
    try {
      const hkt::tasks::Splits splits = hkt::tasks::load_task(task_name, topts);
      const hkt::tasks::Dataset& whole = split == "val" ? splits.val : split == "test" ? splits.test : splits.train;
      const auto& mc = lm.config;
      HKT_CHECK((mc.vocab > 0) == (whole.vocab > 0), "the model takes ",
                mc.vocab > 0 ? "token ids" : "real-valued features", " but '", whole.name, "' holds ",
                whole.vocab > 0 ? "token ids" : "real-valued features");
      HKT_CHECK(whole.vocab <= mc.vocab && whole.features == mc.input_features && whole.seq_len <= mc.max_len,
                "'", whole.name, "' (vocab ", whole.vocab, ", features ", whole.features, ", T ",
                whole.seq_len, ") does not fit the model (vocab ", mc.vocab, ", features ", mc.input_features,
                ", max_len ", mc.max_len, ")");
      data = hkt::tasks::sample(whole, samples, sample_seed);
    } catch (const std::exception& e) {
      std::cerr << "hkt-analyze: error: " << e.what() << "\n";
      return 2;
    }
    if (out.empty()) {
      fs::path p = fs::path(path).lexically_normal();
      if (p.filename().empty()) p = p.parent_path();
      out = fs::is_directory(p) ? (p / "analysis").string() : p.string() + ".analysis";
    }
    std::cout << "hkt-analyze: analysing " << data.size() << " examples (scores, kurtosis, spectra"
              << (opt.cost ? ", timed passes" : "") << "); data ready after " << std::fixed << std::setprecision(1)
              << since() << " s ..." << std::defaultfloat << std::endl;
    hkt::analysis::Report r = hkt::analysis::analyze(*lm.model, data, opt);
    std::cout << "hkt-analyze: done after " << std::fixed << std::setprecision(1) << since() << " s"
              << std::defaultfloat << std::endl;
    r.json["source"] = {{"path", path}, {"weights", lm.weights}, {"task", task_name}, {"split", split},
                        {"sample_seed", sample_seed}};
    if (auto it = lm.metadata.find("hkt.step"); it != lm.metadata.end()) r.json["source"]["step"] = it->second;
    hkt::analysis::write_report(out, r);
    print_summary(r, out);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hkt-analyze: error: " << e.what() << "\n";
    return 1;
  }
}
