// hkt-train's command line (train_main.hpp): options, the run options, train() or resume(),
// and the exit status.
#include "train_main.hpp"

#include <iostream>

#include "hkt/ops/threads.hpp"

#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/train.hpp"
#include "train_options.hpp"

// An error in a job of several processes ends them all (the others may be
// waiting for this one in a collective); otherwise the status is returned.
namespace {

int end(int status) {
  try {
    if (hkt::tasks::world().size > 1) hkt::tasks::abort_job(status);
  } catch (const std::exception&) {  // launched with several processes by a build without MPI: said already
  }
  return status;
}

}  // namespace

int hkt::apps::train_main(int argc, char** argv, const std::function<void(hkt::tasks::RunOptions&)>& adjust) {
  CLI::App app{
      "hkt-train: train a sequence classifier (HKT or MHA) on a task, with evaluation on the validation and "
      "test sets, checkpoints and exact resume.\n"
      "Writes RUN_DIR/config.json, metrics.jsonl, checkpoint/, best.safetensors (best validation accuracy) and "
      "summary.json (test accuracy of the best model).",
      "hkt-train"};
  hkt::apps::TrainOptions topts;
  topts.add(app);
  std::string run_dir, resume_dir;
  bool quiet = false, print_config = false, overwrite = false, no_overlap = false;
  double max_memory_gib = 0;
  int64_t stop_after = 0;
  app.add_option("--run-dir", run_dir, "run folder (default runs/<task>-<model>-s<seed>)");
  app.add_flag("--overwrite", overwrite,
               "train even if RUN_DIR holds a run: its files move to RUN_DIR/replaced.<pid>.<n>/ (with a marker file) "
               "and are deleted once the new run has written its first checkpoint, kept if it stops before "
               "(without the flag such a folder is refused)");
  app.add_option("--max-memory", max_memory_gib,
                 "GiB a training step (with the data set) may take; the estimate is checked before anything is "
                 "built (default 0: the available memory, MemAvailable of /proc/meminfo; a larger value overrides)")
      ->check(CLI::Range(0.0, 1e9));
  CLI::Option* resume_opt = app.add_option("--resume", resume_dir,
                 "continue the run in RUN_DIR from its last checkpoint, with its config.json (only --threads, --quiet, "
                 "--device, --max-memory, --no-overlap, --stop-after, and --steps / --epochs to train a run further, "
                 "may be given with it)");
  app.add_flag("--no-overlap", no_overlap,
               "with several processes (mpirun): reduce the gradient buckets with blocking all-reduces, one after "
               "the other, instead of non-blocking ones started as each bucket is packed (docs/distributed.md)");
  app.add_option("--stop-after", stop_after,
                 "return after this step as if killed, without a checkpoint at that step (tests: a run to resume "
                 "from its last checkpoint; 0 = off)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quiet", quiet, "no console output (the run folder is still written)");
  app.add_flag("--print-config", print_config, "print the resolved config as JSON and exit");
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;

  if (resume_opt->count() > 0 && resume_dir.empty()) {
    std::cerr << "hkt-train: --resume: the run folder is empty (an unset variable?)\n";
    return hkt::apps::kExitUsage;
  }
  try {
    hkt::tasks::RunOptions ropt;
    ropt.quiet = quiet;
    ropt.overwrite = overwrite;
    ropt.max_memory = max_memory_gib * 1024.0 * 1024.0 * 1024.0;
    ropt.device = topts.device();
    ropt.overlap = !no_overlap;
    ropt.stop_after = stop_after;
    if (adjust) adjust(ropt);
    if (!resume_dir.empty()) {
      // --steps / --epochs lengthen the run (docs/tasks.md, "Longer runs"); no other training option.
      std::vector<std::string> extra;
      for (const std::string& g : topts.given())
        if (g != "--steps" && g != "--epochs") extra.push_back(g);
      if (topts.is_given("--steps") || topts.is_given("--epochs")) {
        const hkt::tasks::TrainConfig longer = topts.resolve(false);
        ropt.steps = topts.is_given("--steps") ? longer.steps : 0;
        ropt.epochs = topts.is_given("--epochs") ? longer.epochs : 0;
        if (ropt.steps <= 0 && ropt.epochs <= 0) {
          std::cerr << "hkt-train: error: --resume with --steps / --epochs: give a number of steps or epochs > 0\n";
          return hkt::apps::kExitUsage;
        }
      }
      if (!run_dir.empty()) extra.push_back("--run-dir");
      if (print_config) extra.push_back("--print-config");
      if (overwrite) extra.push_back("--overwrite");
      if (!extra.empty()) {
        std::string list;
        for (const auto& e : extra) list += " " + e;
        std::cerr << "hkt-train: --resume continues a run with its own config.json; remove:" << list << "\n";
        return hkt::apps::kExitUsage;
      }
      if (topts.threads_given() && topts.threads() > 0) hkt::set_num_threads(topts.threads());
      hkt::tasks::resume(resume_dir, ropt);
      return 0;
    }
    hkt::tasks::TrainConfig cfg;
    try {
      cfg = topts.resolve();
      if (!run_dir.empty()) cfg.run_dir = run_dir;
      if (cfg.run_dir.empty()) cfg.run_dir = "runs/" + cfg.task + "-" + cfg.model.preset() + "-s" + std::to_string(cfg.seed);
      // Validated once here (resolve(); the folder is no part of it), and by train() for its callers.
    } catch (const hkt::Error& e) {
      throw hkt::tasks::InputError(e.what());
    }
    if (print_config) {
      std::cout << cfg.to_json() << "\n";
      return 0;
    }
    hkt::tasks::train(cfg, ropt);
    return 0;
  } catch (const hkt::tasks::Stopped& e) {  // Ctrl-C / SIGTERM: a checkpoint of the step reached
    std::cerr << "\nhkt-train: " << hkt::tasks::rank_prefix() << e.what() << "\n";
    return end(128 + e.signal);
  } catch (const hkt::tasks::InputError& e) {
    std::cerr << "hkt-train: error: " << hkt::tasks::rank_prefix() << e.what() << "\n";
    return end(hkt::apps::kExitUsage);
  } catch (const std::exception& e) {
    std::cerr << "\nhkt-train: error: " << hkt::tasks::rank_prefix() << e.what() << "\n";
    return end(hkt::apps::kExitFailure);
  }
}
