// hkt-eval: evaluates a trained classifier on a split of its task: loss,
// accuracy with its 95% interval, per-class accuracy and the confusion matrix.
// It runs the trainer's own evaluate(), so on the run's test split it gives
// exactly the test accuracy of the run's summary.json.
//
//   hkt-eval runs/cpu/imdb/hkt/seed1                       # best.safetensors on the run's test split
//   hkt-eval runs/cpu/imdb/hkt/seed1 --test-size 0         # the whole test split (file tasks)
//   hkt-eval runs/x --weights final --split val --json r.json
//   hkt-eval runs/listops-hkt --task listops-tsv --data-dir DIR   # LRA's files, at the run's length
//   hkt-eval runs/x --launcher "mpirun -np 4"              # or mpirun -np 4 hkt-eval runs/x
//
// Under an MPI launcher the batches are split over the processes and the sums reduced
// (evaluate_across_ranks, docs/distributed.md): the same figures; rank 0 prints and writes.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

#include "hkt/analysis/report.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/memory.hpp"
#include "hkt/tasks/registry.hpp"
#include "cli.hpp"

namespace fs = std::filesystem;

namespace {

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", 100.0 * x);
  return buf;
}

}  // namespace

// On a terminal, the data's generation and the evaluation redraw a line on stderr (stdout
// keeps the results only); it is cleared when each ends.
void show_progress(const std::string& line, bool done) {
  std::cerr << "\r\033[K" << (done ? std::string() : "hkt-eval: " + line) << std::flush;
}

int main(int argc, char** argv) {
  CLI::App app{"hkt-eval: evaluate a trained classifier on a split of its task: loss, accuracy (with a 95% "
               "interval), per-class accuracy and the confusion matrix. Uses the trainer's evaluate(), so on the "
               "run's own test split it reproduces the test accuracy of its summary.json.",
               "hkt-eval"};
  std::string path, weights = "best", split = "test", task, data_dir, device = "cpu", json_out, launcher;
  int64_t test_size = -1, batch_size = 0, threads = 0, seq_len = -1, min_len = -1, max_len = -1;
  double max_memory_gib = 0;
  app.add_option("path", path,
                 "a run folder of hkt-train (best.safetensors, or checkpoint/ with --weights final), a checkpoint "
                 "folder (model.safetensors) or a .safetensors file written by hkt")
      ->required();
  app.add_option("--weights", weights, "for a run folder: best (best.safetensors) or final (checkpoint/)")
      ->check(CLI::IsMember({"best", "final"}))
      ->capture_default_str();
  app.add_option("--split", split, "which split: test, val or train")
      ->check(CLI::IsMember({"test", "val", "train"}))
      ->capture_default_str();
  app.add_option("--test-size", test_size,
                 "test examples (default: the run's; 0: the task's default, for file tasks the whole test split)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--task", task, "task of the data (default: the run's); see hkt-train --help");
  app.add_option("--data-dir", data_dir, "data folder for file-based tasks (default: the run's)");
  app.add_option("--seq-len", seq_len,
                 "sequence length T of the data (default: the run's; with another --task, the model's length, so "
                 "that e.g. a generated-ListOps run scores LRA's files of its length: --task listops-tsv)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--min-len", min_len, "generated ListOps: the shortest expression (default: the run's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--max-len", max_len, "generated ListOps: the longest expression (default: the run's; 0 = T)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--batch-size", batch_size, "examples per forward pass (default: the run's, else 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--threads", threads, "CPU threads (0 = all cores or HKT_NUM_THREADS)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  app.add_option("--device", device,
                 "where to evaluate: cpu, or cuda (needs a GPU and a CUDA build)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--json", json_out, "also write the result as JSON to this file");
  app.add_option("--max-memory", max_memory_gib,
                 "GiB the evaluation (a forward pass and the data set) may take, checked on an estimate before it "
                 "starts (default 0: the available memory, MemAvailable of /proc/meminfo)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--launcher", launcher,
                 "split the evaluation over several processes: start this command under the launcher, e.g. "
                 "--launcher \"mpirun -np 2\" (words split at spaces; docs/distributed.md)");
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;
  if (!launcher.empty()) {
    try {
      hkt::tasks::relaunch(hkt::tasks::launcher_words(launcher), argc, argv, "--launcher");
    } catch (const std::exception& e) {
      std::cerr << "hkt-eval: error: " << e.what() << "\n";
      return 2;
    }
  }

  // Bad input (a missing path, data or device, a model that does not fit the data): exit 2.
  hkt::analysis::LoadedModel lm;
  hkt::tasks::Dataset data;
  std::string task_name = task;
  bool writer = true;  // rank 0 of a job of several processes prints and writes
  double estimate = 0;  // bytes, of the evaluation on the CPU (the --json file has it beside the peak)
  std::optional<hkt::tasks::ProgressSink> progress;
  if (isatty(STDERR_FILENO) && hkt::tasks::world().rank == 0) progress.emplace(show_progress);
  try {
    const hkt::tasks::World& w = hkt::tasks::world();
    writer = w.rank == 0;
    if (threads > 0) hkt::set_num_threads(static_cast<int>(threads));
    else if (w.size > 1 && !std::getenv("HKT_NUM_THREADS"))  // the machine's cores shared by its ranks
      hkt::set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / w.local_size));
    HKT_CHECK(fs::exists(path), "'", path, "' not found");
    if (device == "cuda" && !hkt::cuda_is_available())
      throw hkt::Error("--device cuda: CUDA is not available: " + hkt::cuda_unavailable_reason() +
                       " (use --device cpu)");
    lm = hkt::analysis::load_trained(path, weights);
    hkt::tasks::TaskOptions topts;
    if (lm.train) {
      if (task.empty() || task == lm.train->task) topts = lm.train->data;
      if (task.empty()) task_name = lm.train->task;
    }
    HKT_CHECK(!task_name.empty(), "'", lm.weights,
              "' does not say which task it was trained on; give --task (see hkt-train --help)");
    if (batch_size == 0) batch_size = lm.train ? lm.train->batch_size : 32;
    if (!data_dir.empty()) topts.data_dir = data_dir;
    if (test_size >= 0) topts.test_size = test_size;
    // Another task of the family (a file instead of generated data, say) is read at the
    // model's length unless --seq-len says otherwise.
    if (seq_len > 0) topts.seq_len = seq_len;
    else if (lm.train && task_name != lm.train->task && task_name != "cifar10" && task_name != "cifar10-rgb" &&
             task_name != "fashion-mnist")
      topts.seq_len = lm.config.max_len;
    if (min_len >= 0) topts.min_len = min_len;
    if (max_len >= 0) topts.max_len = max_len;
    hkt::tasks::Splits splits = hkt::tasks::load_task(task_name, topts);
    data = std::move(split == "val" ? splits.val : split == "test" ? splits.test : splits.train);
    const auto& mc = lm.config;
    HKT_CHECK((mc.vocab > 0) == (data.vocab > 0) && data.vocab <= mc.vocab && data.features == mc.input_features &&
                  data.seq_len <= mc.max_len && data.classes == mc.classes,
              "'", data.name, "' (vocab ", data.vocab, ", features ", data.features, ", T ", data.seq_len,
              ", classes ", data.classes, ") does not fit the model (vocab ", mc.vocab, ", features ",
              mc.input_features, ", max_len ", mc.max_len, ", classes ", mc.classes, ")");
    if (device == "cpu") {
      const int64_t per_example = data.seq_len * (data.vocab > 0 ? 9 : 1 + 4 * data.features);
      const hkt::tasks::StepMemory m =
          hkt::tasks::estimate_step_memory(mc, batch_size, data.seq_len, data.size(), per_example, false);
      estimate = m.total();
      hkt::tasks::check_memory(m, max_memory_gib * 1024.0 * 1024.0 * 1024.0, "evaluation");
    }
  } catch (const std::exception& e) {
    std::cerr << "hkt-eval: error: " << e.what() << "\n";
    return hkt::tasks::end_job(2);
  }

  try {
    if (device == "cuda") lm.model->to(hkt::Device::cuda());
    const hkt::tasks::EvalResult r = hkt::tasks::evaluate_across_ranks(*lm.model, data, batch_size);
    if (!writer) return 0;
    // Finite weights whose loss overflows: no result to report.
    HKT_CHECK(std::isfinite(r.loss), "the loss of '", lm.weights, "' on ", data.name, " is ", r.loss,
              " (not finite): the model's outputs overflow");
    const int64_t C = r.classes, n = r.examples;
    const double half = 1.96 * std::sqrt(r.accuracy * (1.0 - r.accuracy) / static_cast<double>(n));
    std::string step = "?";
    if (auto it = lm.metadata.find("hkt.step"); it != lm.metadata.end()) step = it->second;
    std::cout << "hkt-eval: " << lm.weights << " (step " << step << "), task " << task_name << ", " << data.name
              << ": " << n << " examples"
              << (hkt::tasks::world().size > 1 ? " (split over " + std::to_string(hkt::tasks::world().size) +
                                                     " processes)"
                                               : std::string())
              << "\n"
              << "loss " << r.loss << "  accuracy " << pct(r.accuracy) << "% (95% interval +- " << pct(half)
              << " points)\n";
    nlohmann::json per_class = nlohmann::json::array(), confusion = nlohmann::json::array();
    std::cout << "class | examples | accuracy %\n";
    for (int64_t c = 0; c < C; ++c) {
      int64_t row = 0;
      nlohmann::json cr = nlohmann::json::array();
      for (int64_t p = 0; p < C; ++p) {
        const int64_t v = r.confusion[static_cast<size_t>(c * C + p)];
        row += v;
        cr.push_back(v);
      }
      confusion.push_back(cr);
      const double acc = row > 0 ? static_cast<double>(r.confusion[static_cast<size_t>(c * C + c)]) / row : NAN;
      per_class.push_back(row > 0 ? nlohmann::json(acc) : nlohmann::json(nullptr));
      std::cout << c << " | " << row << " | " << (row > 0 ? pct(acc) : "-") << "\n";
    }
    // Right-aligned columns as wide as the largest count or class number; the header row and
    // column give the predicted class and the label.
    int64_t widest = C > 0 ? C - 1 : 0;
    for (const int64_t v : r.confusion) widest = std::max(widest, v);
    const int w = static_cast<int>(std::to_string(widest).size());
    const auto cell = [w](int64_t v) {
      const std::string t = std::to_string(v);
      return std::string(static_cast<size_t>(w) - std::min(t.size(), static_cast<size_t>(w)), ' ') + t;
    };
    std::cout << "confusion matrix (rows: label, columns: predicted):\n" << std::string(static_cast<size_t>(w), ' ')
              << " |";
    for (int64_t p = 0; p < C; ++p) std::cout << " " << cell(p);
    std::cout << "\n" << std::string(static_cast<size_t>(w + 2 + C * (w + 1)), '-') << "\n";
    for (int64_t c = 0; c < C; ++c) {
      std::cout << cell(c) << " |";
      for (int64_t p = 0; p < C; ++p) std::cout << " " << cell(r.confusion[static_cast<size_t>(c * C + p)]);
      std::cout << "\n";
    }
    if (!json_out.empty()) {
      nlohmann::json j = {{"path", path},           {"weights", lm.weights},  {"step", step},
                          {"task", task_name},      {"split", split},         {"data", data.name},
                          {"examples", n},          {"loss", r.loss},         {"accuracy", r.accuracy},
                          {"accuracy_ci95", half},  {"per_class_accuracy", per_class},
                          {"confusion", confusion},  {"ranks", hkt::tasks::world().size},
                          {"peak_rss_bytes", hkt::tasks::peak_rss()}};
      if (estimate > 0) j["memory_estimate_bytes"] = estimate;
      hkt::tasks::write_file_atomic(json_out, j.dump(2) + "\n", true);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hkt-eval: error: " << e.what() << "\n";
    return hkt::tasks::end_job(1);
  }
}
