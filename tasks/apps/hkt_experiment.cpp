// hkt-experiment: runs a grid of trainings described by an experiment file
// (tasks x models x seeds, hkt/tasks/experiment.hpp) one after another,
// skipping finished runs and resuming interrupted ones, and aggregates them
// into OUT/results.md (mean +- std over seeds, time per step, the ratio to
// the baseline model) and OUT/results.csv. With hkt-plot next to it, the
// validation curves of each task go to OUT/plots/<task>/.
//
//   hkt-experiment experiments/cpu.json                 # run (or continue) the whole grid
//   hkt-experiment experiments/cpu.json --list          # the runs and where each stands
//   hkt-experiment experiments/cpu.json --report        # only rebuild the table from finished runs
//   hkt-experiment experiments/cpu.json --only listops  # runs whose "task/model/seed" contains the text
//   hkt-experiment experiments/paper.json --device cuda # train on the GPU (exit 2 when there is none)
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hkt/tasks/experiment.hpp"
#include "train_options.hpp"

namespace {

namespace fs = std::filesystem;
using namespace hkt::tasks;

const char* state_name(RunState s) {
  return s == RunState::Done ? "done" : s == RunState::Started ? "started (will resume)" : "new";
}

std::string run_id(const ExperimentRun& r) { return r.task + "/" + r.model + "/seed" + std::to_string(r.seed); }

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    HKT_CHECK(f.good(), "hkt-experiment: cannot write '", tmp.string(), "'");
  }
  fs::rename(tmp, p);
}

std::string report(const Experiment& e, const std::string& file) {
  std::string md = "# Experiment `" + e.name + "`\n\n";
  if (!e.description.empty()) md += e.description + "\n\n";
  md += "Experiment file: `" + file + "`; seeds:";
  for (uint64_t s : e.seeds) md += " " + std::to_string(s);
  md += ". Accuracies are mean +- sample standard deviation over the finished seeds; the test accuracy is that of "
        "the checkpoint with the best validation accuracy.\n\n";
  if (!e.notes.empty()) {
    md += "Notes:\n";
    for (const std::string& n : e.notes) md += "- " + n + "\n";
    md += "\n";
  }
  return md + results_markdown(e);
}

// hkt-plot of the runs of one task (every model, every finished seed), if hkt-plot is next to us.
void plot(const Experiment& e, const fs::path& self_dir) {
  const fs::path exe = self_dir / "hkt-plot";
  if (!fs::exists(exe)) return;
  for (const std::string& t : e.tasks) {
    std::string cmd = "'" + exe.string() + "'";
    int n = 0;
    for (const ExperimentRun& r : e.runs)
      if (r.task == t && run_state(r.cfg.run_dir) == RunState::Done) cmd += " '" + r.cfg.run_dir + "'", ++n;
    if (n == 0) continue;
    cmd += " --out '" + (fs::path(e.out_dir) / "plots" / t).string() + "' >/dev/null";
    if (std::system(cmd.c_str()) != 0) std::cerr << "hkt-experiment: hkt-plot failed for task " << t << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hkt-experiment: run a grid of trainings (tasks x models x seeds) from an experiment file, one after "
               "another, skipping finished runs and resuming interrupted ones, and write OUT/results.md and "
               "OUT/results.csv (mean +- std over seeds). The file format is documented in "
               "tasks/include/hkt/tasks/experiment.hpp and docs/results.md.",
               "hkt-experiment"};
  std::string file, out_dir, only, device = "cpu";
  bool list = false, report_only = false, quiet = false;
  app.add_option("experiment", file, "experiment file (JSON)")->required()->check(CLI::ExistingFile);
  app.add_option("--out-dir", out_dir, "folder of the runs and results (default: the file's out_dir)");
  app.add_option("--only", only, "run only the runs whose task/model/seed<N> contains this text");
  app.add_flag("--list", list, "list the runs and their state, train nothing");
  app.add_flag("--report", report_only, "only rebuild results.md / results.csv from the finished runs");
  app.add_flag("--quiet", quiet, "no training output");
  hkt::apps::add_device_flag(app, device);  // not part of a run's config: a run may resume on another device
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;

  Experiment e;
  try {
    e = Experiment::from_file(file, out_dir);
    for (const ExperimentRun& r : e.runs)
      if (run_state(r.cfg.run_dir) == RunState::Started) {
        // A started run resumes from its own config.json: it must be the one the file asks for now.
        std::ifstream f(fs::path(r.cfg.run_dir) / "config.json");
        std::stringstream ss;
        ss << f.rdbuf();
        HKT_CHECK(TrainConfig::from_json(ss.str()) == r.cfg, "hkt-experiment: ", r.cfg.run_dir,
                  "/config.json differs from what ", file,
                  " now asks for; delete that run folder to start it again");
      }
  } catch (const hkt::Error& ex) {
    std::cerr << ex.what() << "\n";
    return hkt::apps::kExitUsage;
  }
  const fs::path self_dir = fs::canonical("/proc/self/exe").parent_path();
  if (list) {
    for (const ExperimentRun& r : e.runs)
      std::cout << run_id(r) << "  " << state_name(run_state(r.cfg.run_dir)) << "  " << r.cfg.run_dir << "\n";
    return 0;
  }
  try {
    if (!report_only) {
      const hkt::Device dev = hkt::apps::device_from_flag(device);
      size_t i = 0;
      for (const ExperimentRun& r : e.runs) {
        ++i;
        if (!only.empty() && run_id(r).find(only) == std::string::npos) continue;
        const RunState st = run_state(r.cfg.run_dir);
        std::cout << "[" << i << "/" << e.runs.size() << "] " << run_id(r) << ": " << state_name(st) << std::endl;
        if (st == RunState::Done) continue;
        RunOptions opt;
        opt.quiet = quiet;
        opt.device = dev;
        if (st == RunState::Started)
          resume(r.cfg.run_dir, opt);
        else
          train(r.cfg, opt);
        write_file(fs::path(e.out_dir) / "results.md", report(e, file));  // after every run
      }
    }
    write_file(fs::path(e.out_dir) / "results.md", report(e, file));
    write_file(fs::path(e.out_dir) / "results.csv", results_csv(e));
    plot(e, self_dir);
    std::cout << "\n" << results_markdown(e) << "\nwritten: " << (fs::path(e.out_dir) / "results.md").string()
              << "\n";
  } catch (const InputError& ex) {
    std::cerr << ex.what() << "\n";
    return hkt::apps::kExitUsage;
  } catch (const std::exception& ex) {
    std::cerr << "hkt-experiment: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
