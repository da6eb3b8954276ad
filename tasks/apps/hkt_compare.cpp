// hkt-compare: trains several model presets on one task with the same
// settings and prints a markdown table (model, parameters, validation and
// test accuracy of the best checkpoint, time per step). The quick start
// (tools/quickstart.sh) runs it on generated ListOps.
//
//   hkt-compare --task listops --models hkt-small,mha-small --steps 400 --run-dir runs/compare
//
// Under an MPI launcher (`mpirun -np 2 hkt-compare ...`, or --launcher "mpirun -np 2")
// every run is trained data-parallel by all the processes (docs/distributed.md); rank 0
// prints and writes the table.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/train.hpp"
#include "train_options.hpp"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string pct(double acc) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", 100.0 * acc);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hkt-compare: train each model preset on the same task with the same settings (one run folder per "
      "model under RUN_DIR) and print a markdown table of parameters, best validation accuracy, test accuracy "
      "of the best checkpoint and time per step; the table is also written to RUN_DIR/results.md.",
      "hkt-compare"};
  hkt::apps::TrainOptions topts;
  topts.add(app, /*with_model=*/false);
  std::string models = "hkt-tiny,mha-tiny", run_dir = "runs/compare";
  bool quiet = false, overwrite = false;
  std::string launcher;
  app.add_option("--launcher", launcher,
                 "train every run with several processes: start this command under the launcher, e.g. "
                 "--launcher \"mpirun -np 2\" (words split at spaces; docs/distributed.md)");
  app.add_option("--models", models, "comma-separated presets to compare")->capture_default_str();
  app.add_option("--run-dir", run_dir, "folder of the runs and results.md")->capture_default_str();
  app.add_flag("--quiet", quiet, "no training output, only the table");
  app.add_flag("--overwrite", overwrite,
               "replace runs already in RUN_DIR (as hkt-train --overwrite; without it such a folder is refused)");
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;

  if (!launcher.empty()) {
    try {
      hkt::tasks::relaunch(hkt::tasks::launcher_words(launcher), argc, argv, "--launcher");
    } catch (const std::exception& e) {
      std::cerr << "hkt-compare: error: " << e.what() << "\n";
      return hkt::apps::kExitUsage;
    }
  }

  try {
    bool writer = true;  // rank 0 of a job of several processes prints and writes
    try {
      writer = hkt::tasks::world().rank == 0;
    } catch (const hkt::Error& e) {
      throw hkt::tasks::InputError(e.what());
    }
    if (!writer) quiet = true;
    const hkt::Device device = topts.device();
    hkt::tasks::TrainConfig base;
    try {
      base = topts.resolve(false);  // validated below, with each model of --models
      HKT_CHECK(!split(models).empty(), "--models: no preset given");
      for (const std::string& m : split(models)) {
        hkt::tasks::TrainConfig c = base;
        c.model = base.model.with_preset(m, true);  // --levels is for the HKT models
        c.validate();
      }
    } catch (const hkt::Error& e) {
      throw hkt::tasks::InputError(e.what());
    }
    std::ostringstream table;
    table << "| model | params | best val acc (%) | test acc (%) | best step | time/step (ms) |\n"
          << "|---|---:|---:|---:|---:|---:|\n";
    for (const std::string& m : split(models)) {
      hkt::tasks::TrainConfig cfg = base;
      cfg.model = base.model.with_preset(m, true);
      cfg.run_dir = run_dir + "/" + m;
      if (!quiet) std::cout << "== " << m << " (" << cfg.run_dir << ") ==\n" << std::flush;
      hkt::tasks::RunOptions ropt;
      ropt.quiet = quiet;
      ropt.overwrite = overwrite;
      ropt.device = device;
      const hkt::tasks::TrainResult r = hkt::tasks::train(cfg, ropt);
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f", 1000.0 * r.s_per_step);
      table << "| " << m << " | " << r.params << " | " << pct(r.best_val_acc) << " | " << pct(r.test_acc) << " | "
            << r.best_step << " | " << ms << " |\n";
    }
    std::ostringstream doc;
    doc << "Task `" << base.task << "`, " << (base.steps > 0 ? std::to_string(base.steps) + " steps" :
                                               std::to_string(base.epochs) + " epochs")
        << " of batch " << base.batch_size << ", lr " << base.lr << ", seed " << base.seed << ".\n\n"
        << table.str();
    if (!writer) return 0;
    hkt::tasks::write_file_atomic(run_dir + "/results.md", doc.str());
    std::cout << "\n" << doc.str() << "\n(written to " << run_dir << "/results.md)\n";
    return 0;
  } catch (const hkt::tasks::Stopped& e) {
    std::cerr << "\nhkt-compare: " << e.what() << "\n";
    return hkt::tasks::end_job(128 + e.signal);
  } catch (const hkt::tasks::InputError& e) {
    std::cerr << "hkt-compare: error: " << e.what() << "\n";
    return hkt::tasks::end_job(hkt::apps::kExitUsage);
  } catch (const std::exception& e) {
    std::cerr << "\nhkt-compare: error: " << e.what() << "\n";
    return hkt::tasks::end_job(hkt::apps::kExitFailure);
  }
}
