// hkt-experiment's reports (hkt_experiment.cpp): a run's state and id, --list as text and
// JSON, OUT/results.md with the experiment's header, and the plots of its finished runs.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "hkt/tasks/experiment.hpp"

namespace hkt::apps {

namespace fs = std::filesystem;
using hkt::tasks::Experiment;
using hkt::tasks::ExperimentRun;
using hkt::tasks::RunState;
using hkt::tasks::RunSummary;
using hkt::tasks::last_logged_step;
using hkt::tasks::read_summary;
using hkt::tasks::results_markdown;
using hkt::tasks::run_state;

inline const char* state_name(RunState s) {
  return s == RunState::Done ? "done" : s == RunState::Started ? "started (will resume)" : "new";
}

inline std::string run_id(const ExperimentRun& r) { return r.task + "/" + r.model + "/seed" + std::to_string(r.seed); }


// For --list: the test accuracy of a finished run, the last logged step of a started one.
inline std::string progress(const ExperimentRun& r, RunState st) {
  char buf[96];
  if (st == RunState::Done) {
    const RunSummary sm = read_summary(r.cfg.run_dir);
    std::snprintf(buf, sizeof buf, "  test %.2f%%, best val %.2f%% at step %lld", 100.0 * sm.test_acc,
                  100.0 * sm.best_val_acc, static_cast<long long>(sm.best_step));
    return buf;
  }
  if (st != RunState::Started) return "";
  const long long step = last_logged_step(r.cfg.run_dir);
  if (step < 0) return "";
  if (r.cfg.steps > 0)
    std::snprintf(buf, sizeof buf, "  step %lld of %lld (last logged)", step, static_cast<long long>(r.cfg.steps));
  else
    std::snprintf(buf, sizeof buf, "  step %lld (last logged)", step);
  return buf;
}

// --list --json: the experiment and every run as one JSON object on stdout (docs/results.md,
// "Where a grid stands"); a run whose summary.json cannot be read gets "error" and the status is 1.
inline int list_json(const Experiment& e, const std::string& file) {
  using json = nlohmann::ordered_json;
  json runs = json::array();
  int status = 0;
  for (const ExperimentRun& r : e.runs) {
    const RunState st = run_state(r.cfg.run_dir);
    json j = {{"id", run_id(r)},
              {"task", r.task},
              {"model", r.model},
              {"seed", r.seed},
              {"state", st == RunState::Done ? "done" : st == RunState::Started ? "started" : "new"},
              {"run_dir", r.cfg.run_dir},
              {"steps", r.cfg.steps},
              {"waiting", r.waiting.empty() || st == RunState::Done ? json(nullptr) : json(r.waiting)},
              {"shared_with", r.shared_with.empty() ? json(nullptr) : json(r.shared_with)}};
    try {
      if (st == RunState::Done) {
        const RunSummary sm = read_summary(r.cfg.run_dir);
        j["test_acc"] = sm.test_acc;
        j["best_val_acc"] = sm.best_val_acc;
        j["best_step"] = sm.best_step;
      } else if (st == RunState::Started) {
        const int64_t step = last_logged_step(r.cfg.run_dir);
        j["last_step"] = step < 0 ? json(nullptr) : json(step);
      }
    } catch (const std::exception& ex) {
      j["error"] = ex.what();
      status = 1;
    }
    runs.push_back(std::move(j));
  }
  const json out = {{"experiment", e.name}, {"file", file}, {"out_dir", e.out_dir}, {"runs", std::move(runs)}};
  std::cout << out.dump(1) << "\n";
  return status;
}

inline std::string report(const Experiment& e, const std::string& file) {
  std::string md = "# Experiment `" + e.name + "`\n\n";
  if (!e.description.empty()) md += e.description + "\n\n";
  md += "Experiment file: `" + file + "`; seeds:";
  for (uint64_t s : e.seeds) md += " " + std::to_string(s);
  md += ". Accuracies are mean +- sample standard deviation over the finished seeds; the test accuracy is that of "
        "the checkpoint with the best validation accuracy.\n\n";
  if (!e.tuning_choices.empty()) {
    md += "Settings chosen by the tuning runs (validation accuracy only):\n";
    for (const std::string& c : e.tuning_choices) md += "- " + c + "\n";
    md += "\n";
  }
  if (!e.notes.empty()) {
    md += "Notes:\n";
    for (const std::string& n : e.notes) md += "- " + n + "\n";
    md += "\n";
  }
  return md + results_markdown(e);
}

// hkt-plot of the runs of one task (every model, every finished seed), if hkt-plot is next to us.
inline void plot(const Experiment& e, const fs::path& self_dir) {
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

}  // namespace hkt::apps
