// hkt-analyze theory: Proposition 4.5 and Theorem 4.3 on one trained model (docs/analysis.md,
// "hkt-analyze theory"; hkt/analysis/levels_report.hpp).
//
//   hkt-analyze theory runs/listops-mha --ranks 1,4,8 --samples 4 --out runs/listops-mha/theory
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "analyze_common.hpp"
#include "hkt/analysis/levels_report.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/registry.hpp"
#include "cli.hpp"

namespace fs = std::filesystem;

namespace {

void print(const hkt::analysis::Report& r, const std::string& out) {
  const auto& j = r.json;
  std::cout << "model " << j["model_config"]["attention"].get<std::string>() << ", " << j["data"]["examples"]
            << " examples of " << j["data"]["name"].get<std::string>()
            << "\nProposition 4.5: best L-level fit of each head's row-centred scores (pooled over layers, heads and "
               "examples)\nrank | rel. residual at L = 1 ..  | factor per level [95%] | verdict\n";
  for (const auto& f : j["levelfit"]) {
    std::cout << f["rank"] << " |";
    for (const auto& v : f["rel_residual"]) std::cout << " " << fmt(v);
    std::cout << " | " << fmt(f["factor"]) << " [" << fmt(f["factor_95"][0]) << ", " << fmt(f["factor_95"][1])
              << "] | " << f["verdict"].get<std::string>() << "\n";
  }
  if (!j["information"].empty()) {
    std::cout << "Theorem 4.3: what level l's scores tell about the fine scores (layer, head, level: rho^2, residual "
                 "excess kurtosis, Gaussian information + kurtosis correction, nats)\n";
    for (const auto& e : j["information"])
      std::cout << e["layer"] << ", " << e["head"] << ", " << e["level"] << ": rho2 " << fmt(e["rho2"]) << ", kurt_e "
                << fmt(e["kurt_e"]) << ", " << fmt(e["gaussian"]) << " + " << fmt(e["correction"]) << "\n";
  }
  std::cout << "(written to " << out << ")\n";
}

}  // namespace

int theory_main(int argc, char** argv) {
  CLI::App app{"hkt-analyze theory: Proposition 4.5 and Theorem 4.3 on a trained model. For each head's combined "
               "score matrix on sampled examples (the fixed target), the best fit of the L-level HKT structure "
               "(per-level maps of rank r, block-constant upsampling, a free constant per row) for L = 1 .. "
               "--max-levels, its residual against L and a log-linear fit of the decay; for an HKT model, per level "
               "the squared correlation of the level's scores with the fine ones, the Gaussian information and its "
               "kurtosis correction. Writes OUT/report.json, levelfit.csv, levelfit_fit.csv, information.csv "
               "(docs/analysis.md).",
               "hkt-analyze theory"};
  std::string path, out, data_dir, split = "val", weights = "best", task;
  int64_t samples = 4, threads = 0, seq_len = 0;
  uint64_t sample_seed = 0;
  hkt::analysis::TheoryOptions opt;
  app.add_option("path", path, "run folder, checkpoint folder or .safetensors file")->required();
  app.add_option("--out", out, "output folder (default PATH/theory; replaced atomically)");
  app.add_option("--weights", weights, "for run folders: best or final")
      ->check(CLI::IsMember({"best", "final"}))
      ->capture_default_str();
  app.add_option("--task", task, "task (default: the run's)");
  app.add_option("--data-dir", data_dir, "data folder for file-based tasks (default: the run's)");
  app.add_option("--seq-len", seq_len, "sequence length (default: the run's)")->check(CLI::NonNegativeNumber);
  add_sample_options(app, split, samples, sample_seed);
  app.add_option("--ranks", opt.ranks, "per-level ranks r of the fitted structure")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  app.add_option("--max-levels", opt.max_levels, "fit L = 1 .. this")
      ->check(CLI::Range(int64_t{2}, int64_t{12}))
      ->capture_default_str();
  app.add_option("--max-len", opt.max_len, "fit at most this many leading positions of an example")
      ->check(CLI::Range(int64_t{2}, int64_t{4096}))
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (0 = all cores or HKT_NUM_THREADS)")->check(CLI::NonNegativeNumber);
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;
  try {
    if (threads > 0) hkt::set_num_threads(static_cast<int>(threads));
    HKT_CHECK(fs::exists(path), "'", path, "' not found");
    hkt::analysis::LoadedModel m = hkt::analysis::load_trained(path, weights);
    HKT_CHECK(m.train.has_value() || !task.empty(), "'", m.weights, "' does not say which task it was trained on: give --task");
    hkt::tasks::TaskOptions topts = m.train ? m.train->data : hkt::tasks::TaskOptions{};
    if (!data_dir.empty()) topts.data_dir = data_dir;
    if (seq_len > 0) topts.seq_len = seq_len;
    const std::string task_name = task.empty() ? m.train->task : task;
    const hkt::tasks::Splits splits = hkt::tasks::load_task(task_name, topts);
    const hkt::tasks::Dataset& whole = split == "val" ? splits.val : split == "test" ? splits.test : splits.train;
    const hkt::tasks::Dataset data = hkt::tasks::sample(whole, samples, sample_seed);
    hkt::analysis::Report r = hkt::analysis::theory_report(*m.model, data, opt);
    r.json["source"] = {{"weights", m.weights}, {"task", task_name}, {"split", split}, {"sample_seed", sample_seed}};
    if (out.empty()) out = (fs::is_directory(path) ? fs::path(path) / "theory" : fs::path(path + ".theory")).string();
    hkt::analysis::write_report(out, r);
    print(r, out);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hkt-analyze theory: error: " << e.what() << "\n";
    return 1;
  }
}
