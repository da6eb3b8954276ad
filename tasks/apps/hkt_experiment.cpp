// hkt-experiment: runs a grid of trainings described by an experiment file
// (tasks x models x seeds, hkt/tasks/experiment.hpp) one after another, seed by
// seed, skipping finished runs and resuming interrupted ones, and aggregates them
// into OUT/results.md (mean +- std over seeds, time per step, the ratio to
// the baseline model) and OUT/results.csv. With hkt-plot next to it, the
// validation curves of each task go to OUT/plots/<task>/.
//
//   hkt-experiment experiments/cpu.json                 # run (or continue) the whole grid
//   hkt-experiment experiments/cpu.json --list          # the runs and where each stands
//   hkt-experiment experiments/cpu.json --list --json   # the same as one JSON object, for scripts
//   hkt-experiment experiments/cpu.json --report        # only rebuild the table from finished runs
//   hkt-experiment experiments/cpu.json --only listops  # runs whose "task/model/seed" contains the text
//                                                        (repeat --only to run those matching any of them)
//   hkt-experiment experiments/cpu.json --jobs 2        # two runs at a time, each in its own process
//   hkt-experiment experiments/paper.json --device cuda # train on the GPU (exit 2 when there is none)
//
// With --jobs N > 1 each run is a child process (this program with --run ID
// --no-report) with 1/N of the threads (HKT_NUM_THREADS, OPENBLAS_NUM_THREADS)
// and its output in OUT/logs/<task>-<model>-seed<N>.log; this process only
// schedules and aggregates. Results do not depend on the thread count.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hkt/core/safe_open.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/experiment.hpp"
#include "hkt/tasks/files.hpp"
#include "build_guard.hpp"
#include "experiment_report.hpp"
#include "grid_progress.hpp"
#include "train_options.hpp"

namespace {

namespace fs = std::filesystem;
using namespace hkt::tasks;
using hkt::apps::list_json;
using hkt::apps::plot;
using hkt::apps::progress;
using hkt::apps::report;
using hkt::apps::run_id;
using hkt::apps::state_name;

// A message that starts with the program's name.
std::string with_program(const std::string& msg) {
  return msg.rfind("hkt-experiment", 0) == 0 ? msg : "hkt-experiment: error: " + msg;
}

extern "C" char** environ;

// With --jobs: SIGINT / SIGTERM to this process are passed on to the children.
volatile sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) { g_signal = sig; }
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: waitpid returns EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Starts `exe args...` with stdout and stderr appended to `log` and
// HKT_NUM_THREADS / OPENBLAS_NUM_THREADS set to `threads`. Returns the pid.
// With a launcher (the experiment's "launcher"), `launcher... exe args...`, found on PATH.
pid_t spawn_child(const fs::path& exe, const std::vector<std::string>& args, const fs::path& log, int threads,
                  const std::vector<std::string>& launcher) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("HKT_NUM_THREADS=", 0) != 0 && kv.rfind("OPENBLAS_NUM_THREADS=", 0) != 0) env.push_back(kv);
  }
  env.push_back("HKT_NUM_THREADS=" + std::to_string(threads));
  env.push_back("OPENBLAS_NUM_THREADS=" + std::to_string(threads));
  std::vector<std::string> argv_s = launcher;
  argv_s.push_back(exe.string());
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The log is never written through a link (hkt/core/safe_open.hpp): checked, and O_NOFOLLOW.
  hkt::refuse_non_regular(log.string(), "hkt-experiment: the log");
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = launcher.empty() ? posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data())
                                  : posix_spawnp(&pid, argv_s[0].c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  HKT_CHECK(rc == 0, "hkt-experiment: cannot start '", argv_s[0], "': ", std::strerror(rc));
  return pid;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hkt-experiment: run a grid of trainings (tasks x models x seeds) from an experiment file, one after "
               "another, skipping finished runs and resuming interrupted ones, and write OUT/results.md and "
               "OUT/results.csv (mean +- std over seeds). The file format is documented in "
               "tasks/include/hkt/tasks/experiment.hpp and docs/results.md.",
               "hkt-experiment"};
  std::string file, out_dir, exact, device = "cpu";
  std::vector<std::string> only;
  bool list = false, list_as_json = false, report_only = false, quiet = false, no_report = false;
  int jobs = 1;
  app.add_option("experiment", file, "experiment file (JSON)")->required()->check(CLI::ExistingFile);
  app.add_option("--out-dir", out_dir, "folder of the runs and results (default: the file's out_dir)");
  app.add_option("--only", only,
                 "run only the runs whose task/model/seed<N> contains this text (repeatable: those that contain any)");
  app.add_option("--run", exact, "run only the run task/model/seed<N> (exactly this id, as --list prints it)");
  app.add_option("--jobs", jobs,
                 "runs at a time, each in its own process with 1/N of the threads and its output in "
                 "OUT/logs/ (default 1: one after another, in this process)")
      ->check(CLI::Range(1, 64));
  // Internal: a run started under the experiment's launcher (every rank must take the same decision,
  // so the parent passes the run's state, read before any rank writes).
  std::string launched_state;
  app.add_option("--launched-as", launched_state, "")->check(CLI::IsMember({"new", "started"}))->group("");
  app.add_flag("--no-report", no_report, "train only; do not rewrite results.md, results.csv or the plots");
  CLI::Option* list_flag = app.add_flag("--list", list, "list the runs and their state, train nothing");
  app.add_flag("--json", list_as_json,
               "with --list: one JSON object (the experiment, and per run its id, task, model, seed, state, "
               "run_dir, steps, waiting, shared_with, and the accuracies of a finished run or the last logged "
               "step of a started one)")
      ->needs(list_flag);
  app.add_flag("--report", report_only, "only rebuild results.md / results.csv from the finished runs");
  app.add_flag("--quiet", quiet, "no training output");
  hkt::apps::add_device_flag(app, device);  // not part of a run's config: a run may resume on another device
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;

  Experiment e;
  try {
    e = Experiment::from_file(file, out_dir);
    for (const ExperimentRun& r : e.runs)
      if (r.waiting.empty() && run_state(r.cfg.run_dir) == RunState::Started) {
        // A started run resumes from its own config.json: it must be the one the file asks for now.
        const fs::path started_file = fs::path(r.cfg.run_dir) / "config.json";
        TrainConfig started;
        try {
          started = TrainConfig::from_json(read_text_file(started_file));
        } catch (const hkt::Error& ex) {
          throw hkt::Error(hkt::str_cat("hkt-experiment: ", started_file.string(), ": ", ex.what()));
        }
        HKT_CHECK(started == r.cfg, "hkt-experiment: ", r.cfg.run_dir, "/config.json differs from what ", file,
                  " now asks for; delete that run folder to start it again");
      }
  } catch (const hkt::Error& ex) {
    std::cerr << with_program(ex.what()) << "\n";
    return hkt::apps::kExitUsage;
  }
  const fs::path self_exe = fs::canonical("/proc/self/exe"), self_dir = self_exe.parent_path();
  if (list && list_as_json) return list_json(e, file);
  if (list) {
    // A run whose summary.json cannot be read is listed with the reason; the status is then 1.
    int status = 0;
    std::string errors;
    for (const ExperimentRun& r : e.runs) {
      const RunState st = run_state(r.cfg.run_dir);
      std::string more;
      try {
        more = progress(r, st);
      } catch (const std::exception& ex) {
        more = "  (unreadable, see below)";
        errors += std::string("hkt-experiment: --list: ") + ex.what() + "\n";
        status = 1;
      }
      if (!r.waiting.empty() && st != RunState::Done) {
        std::cout << run_id(r) << "  " << r.waiting << "\n";
        continue;
      }
      std::cout << run_id(r) << "  " << state_name(st) << "  " << r.cfg.run_dir << more << "\n";
    }
    std::cout.flush();
    std::cerr << errors;
    return status;
  }
  auto contains = [&](const ExperimentRun& r, const std::string& text) {
    return run_id(r).find(text) != std::string::npos;
  };
  auto chosen = [&](const ExperimentRun& r) {
    const bool matched =
        only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& text) { return contains(r, text); });
    return matched && (exact.empty() || run_id(r) == exact);
  };
  // A run waiting for its tuning, or trained by another experiment ("shared_with"), is not trained here
  // (it is reported before and after).
  size_t waiting = 0;
  for (const ExperimentRun& r : e.runs)
    if (chosen(r) && !r.waiting.empty() && run_state(r.cfg.run_dir) != RunState::Done) {
      if (!list) std::cout << run_id(r) << ": not trained, " << r.waiting << "\n";
      ++waiting;
    }
  auto selected = [&](const ExperimentRun& r) { return chosen(r) && r.waiting.empty(); };
  for (const std::string& text : only)
    if (std::none_of(e.runs.begin(), e.runs.end(), [&](const ExperimentRun& r) { return contains(r, text); })) {
      std::cerr << "hkt-experiment: --only " << text << ": no run id of " << file << " contains it (hkt-experiment "
                << file << " --list shows the ids)\n";
      return hkt::apps::kExitUsage;
    }
  if (!exact.empty()) {
    bool found = false;
    for (const ExperimentRun& r : e.runs) found = found || run_id(r) == exact;
    if (!found) {
      std::cerr << "hkt-experiment: --run " << exact << ": no such run in " << file
                << " (hkt-experiment " << file << " --list shows the ids)\n";
      return hkt::apps::kExitUsage;
    }
  }
  // Training order: seed by seed (every task and model of the first seed, then the next), so
  // that a stop leaves whole seeds to compare, or with "order": "task" task by task and seed by
  // seed within each; [i/n] keeps the grid's numbering (--list).
  std::vector<size_t> order(e.runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto seed_pos = [&](size_t i) {
    return std::find(e.seeds.begin(), e.seeds.end(), e.runs[i].seed) - e.seeds.begin();
  };
  auto task_pos = [&](size_t i) {
    return std::find(e.tasks.begin(), e.tasks.end(), e.runs[i].task) - e.tasks.begin();
  };
  // "order": "task" finishes each task (seed by seed) before the next.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (e.order == "task" && task_pos(a) != task_pos(b)) return task_pos(a) < task_pos(b);
    return seed_pos(a) < seed_pos(b);
  });
  const fs::path results_md = fs::path(e.out_dir) / "results.md";
  std::vector<size_t> failed;  // grid indices of the runs that failed (--jobs)
  std::string rebuilt;     // --jobs: why the parent stopped starting children (its build changed), or ""
  size_t not_started = 0;  // the runs it did not start then
  try {
    if (!report_only) {
      const hkt::Device dev = hkt::apps::device_from_flag(device);
      // [k/n]: the k-th run in the order the grid trains them (n: all the grid's runs).
      size_t started = 0;
      if ((jobs == 1 && e.launcher.empty()) || !launched_state.empty()) {
        size_t to_train = 0;
        for (const ExperimentRun& r : e.runs) to_train += selected(r) && run_state(r.cfg.run_dir) != RunState::Done;
        hkt::apps::GridProgress progress(to_train, 1);
        for (const size_t i : order) {
          const ExperimentRun& r = e.runs[i];
          if (!selected(r)) continue;
          ++started;
          const RunState st = launched_state.empty()     ? run_state(r.cfg.run_dir)
                              : launched_state == "new" ? RunState::New
                                                        : RunState::Started;
          std::cout << "[" << started << "/" << e.runs.size() << "] " << run_id(r) << ": " << state_name(st)
                    << std::endl;
          if (st == RunState::Done) continue;
          RunOptions opt;
          opt.quiet = quiet;
          opt.device = dev;
          const auto t0 = std::chrono::steady_clock::now();
          if (st == RunState::Started)
            resume(r.cfg.run_dir, opt);
          else
            train(r.cfg, opt);
          progress.ended(hkt::apps::seconds_since(t0));
          if (launched_state.empty()) std::cout << "grid: " << progress.str() << std::endl;
          if (!no_report) write_file_atomic(results_md, report(e, file), true);  // after every run
        }
      } else {
        // Each run in a child process; at most `jobs` at a time.
        const int threads = std::max(1, hkt::get_num_threads() / jobs);
        const fs::path logs = fs::path(e.out_dir) / "logs";
        fs::create_directories(logs);
        std::deque<size_t> pending;
        for (const size_t i : order)
          if (selected(e.runs[i]) && run_state(e.runs[i].cfg.run_dir) != RunState::Done) pending.push_back(i);
        const size_t to_train = pending.size();
        std::cout << pending.size() << " run(s) to train, " << jobs << " at a time with " << threads
                  << " thread(s) each; their output goes to " << logs.string() << "/" << std::endl;
        std::map<pid_t, size_t> running;
        std::map<pid_t, std::chrono::steady_clock::time_point> began;
        hkt::apps::GridProgress progress(to_train, jobs);
        const hkt::apps::BuildGuard guard;  // children start from these files: stop if they are rebuilt
        catch_stop_signals();
        while (!pending.empty() || !running.empty()) {
          if (g_signal != 0) {
            // Stop: pass the signal on, wait for the children; their runs resume next time.
            for (const auto& [child, idx] : running) kill(child, g_signal);
            for (const auto& [child, idx] : running) waitpid(child, nullptr, 0);
            std::cerr << "hkt-experiment: stopped by signal " << g_signal << " with " << running.size()
                      << " run(s) under way; rerun the same command to resume them\n";
            return 128 + g_signal;
          }
          if (!pending.empty() && rebuilt.empty()) {
            rebuilt = guard.changed();
            if (!rebuilt.empty()) {
              not_started = pending.size();
              pending.clear();
              std::cerr << "hkt-experiment: " << rebuilt << "; not starting the " << not_started
                        << " run(s) left (a child would run other code than this grid's runs so far), waiting for the "
                        << running.size() << " under way" << std::endl;
            }
          }
          while (static_cast<int>(running.size()) < jobs && !pending.empty() && g_signal == 0) {
            const ExperimentRun& r = e.runs[pending.front()];
            const fs::path log = logs / (r.task + "-" + r.model + "-seed" + std::to_string(r.seed) + ".log");
            std::vector<std::string> args = {file,      "--out-dir", e.out_dir, "--run",
                                             run_id(r), "--device",  device,    "--no-report"};
            if (!e.launcher.empty()) {
              args.push_back("--launched-as");
              args.push_back(run_state(r.cfg.run_dir) == RunState::Started ? "started" : "new");
            }
            const pid_t pid = spawn_child(self_exe, args, log, threads, e.launcher);
            std::cout << "[" << ++started << "/" << to_train << "] " << run_id(r) << ": "
                      << state_name(run_state(r.cfg.run_dir)) << ", pid " << pid << ", log " << log.string()
                      << std::endl;
            running[pid] = pending.front();
            began[pid] = std::chrono::steady_clock::now();
            pending.pop_front();
          }
          int status = 0;
          const pid_t pid = waitpid(-1, &status, 0);
          if (pid < 0) {
            if (errno == EINTR) continue;  // a signal: handled at the top of the loop
            throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
          }
          const auto it = running.find(pid);
          if (it == running.end()) continue;
          const size_t idx = it->second;
          const ExperimentRun& r = e.runs[idx];
          running.erase(it);
          const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
          progress.ended(hkt::apps::seconds_since(began[pid]));
          std::cout << run_id(r) << ": " << (ok ? "finished" : "FAILED (" + exit_text(status) + ")") << "; grid: "
                    << progress.str() << std::endl;
          if (!ok) failed.push_back(idx);
          if (!no_report) write_file_atomic(results_md, report(e, file), true);
        }
      }
    }
    if (!no_report) {
      write_file_atomic(results_md, report(e, file), true);
      write_file_atomic(fs::path(e.out_dir) / "results.csv", results_csv(e), true);
      plot(e, self_dir);
      std::cout << "\n" << results_markdown(e) << "\nwritten: " << results_md.string() << "\n";
    }
  } catch (const hkt::tasks::Stopped& ex) {  // the run under way has a checkpoint of the step it reached
    std::cerr << "\nhkt-experiment: " << hkt::tasks::rank_prefix() << ex.what()
              << " Rerun the same command to resume the grid.\n";
    return hkt::tasks::end_job(128 + ex.signal);
  } catch (const InputError& ex) {
    std::cerr << with_program(hkt::tasks::rank_prefix() + ex.what()) << "\n";
    return hkt::tasks::end_job(hkt::apps::kExitUsage);
  } catch (const std::exception& ex) {
    std::cerr << "hkt-experiment: " << hkt::tasks::rank_prefix() << ex.what() << "\n";
    return hkt::tasks::end_job(1);
  }
  if (!rebuilt.empty())
    std::cerr << "hkt-experiment: " << not_started << " run(s) not started: " << rebuilt
              << "; rerun the command (from the new build) to train them\n";
  if (!failed.empty()) {
    std::sort(failed.begin(), failed.end());  // the grid's order, not the order the children ended in
    std::cerr << "hkt-experiment: " << failed.size() << " run(s) failed:";
    for (const size_t i : failed) std::cerr << " " << run_id(e.runs[i]);
    std::cerr << " (their logs are in " << (fs::path(e.out_dir) / "logs").string()
              << "/; rerun the same command to resume them)\n";
  }
  if (!failed.empty() || !rebuilt.empty()) return hkt::apps::kExitFailure;
  if (waiting > 0 && !report_only)
    std::cout << waiting << " run(s) wait for their tuning runs or for the experiment that trains them (listed "
                 "above); rerun this command once those have finished\n";
  return 0;
}
