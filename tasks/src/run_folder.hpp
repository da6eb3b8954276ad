// The run folder of a training run (RunFolder, run_files.cpp), and the rules of
// a run folder that train() and resume() share (run_folder.cpp): what a run
// writes there, which checkpoint --resume may continue from, and the signals a
// run turns into a clean stop. Internal to tasks/src.
#pragma once
#include <signal.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hkt/tasks/files.hpp"
#include "hkt/tasks/train.hpp"

namespace hkt::tasks::detail {

using json = nlohmann::ordered_json;

// What a run writes into its folder (the lock file aside).
inline constexpr const char* kRunFiles[] = {"config.json",      "metrics.jsonl",  "checkpoint",
                                            "checkpoint.tmp",   "checkpoint.old", "checkpoint.trash",
                                            "best.safetensors", "summary.json",   "data.json",
                                            kTestPredictionsFile};

// Whether `p` is there in any form (a file, a folder, a dangling link).
bool present(const std::filesystem::path& p);

// A run folder that exists must be a folder (not a file, a link loop, ...):
// InputError("<who>: ...") otherwise.
void check_run_folder(const std::filesystem::path& dir, const char* who);

// The checkpoint --resume must continue from. checkpoint/ is only ever made by
// renaming a whole save folder, so when it is there in any form it must be
// complete; without it, checkpoint.old/ (a kill between Checkpoints::save's two
// renames). Empty when the run has none yet (killed before its first
// checkpoint); InputError naming the file when one is damaged or missing.
std::filesystem::path checkpoint_to_resume(const std::filesystem::path& run);

// A checkpoint's metadata value `key` of the file `ck` as an integer / a
// finite number: the whole text, else hkt::Error naming file, key and value.
int64_t metadata_int(const std::string& s, const std::filesystem::path& ck, const char* key);
double metadata_double(const std::string& s, const std::filesystem::path& ck, const char* key);

// The folder one run writes (the files are listed in train.hpp): rank 0 alone
// writes it (the writer), and a run without a folder (an empty path) writes
// nothing. It owns the folder's lock and the run that --overwrite moved aside.
// The checkpoints in it are Checkpoints' (checkpoints.hpp).
class RunFolder {
 public:
  RunFolder(std::filesystem::path dir, bool overwrite);
  const std::filesystem::path& dir() const { return dir_; }
  bool none() const { return dir_.empty(); }
  // Whether this process writes the folder: there is one, and this is rank 0.
  bool writes() const { return !dir_.empty() && writer_; }

  // A fresh run: refused at once when the folder holds a run (unless overwrite);
  // start(), once the data and settings are checked, creates and locks the folder,
  // refuses an earlier run again or (overwrite) moves it aside, and writes config.json.
  void refuse_earlier_run() const;
  void start(const TrainConfig& cfg);
  // --resume: locks the folder, checks the names the run writes (no link, FIFO or
  // folder under them), puts back or finishes an interrupted --overwrite.
  void open_to_resume();
  // --resume from `step`: the events of metrics.jsonl after it (and lines that do not
  // parse, a torn last line) go, as they will be logged again.
  void keep_metrics_until(int64_t step);
  // resume() to more steps: config.json of the new length; the finished run's
  // summary.json and test predictions go.
  void lengthen(const TrainConfig& cfg);

  // Appends an event to metrics.jsonl; a failed append stops the run (Error
  // naming `step` and the checkpoint kept).
  void metric(const json& j, int64_t step);
  // Writes a file of the folder atomically (when this process writes it).
  void write(const std::string& name, const std::string& text) const;
  // What a stopped run leaves to --resume.
  std::string kept_checkpoint() const;

  // Whether a run moved aside by --overwrite (or one this run took over) waits for
  // this run's first checkpoint; drop_replaced() deletes it.
  bool replacing() const { return !parked_.empty(); }
  void drop_replaced();

 private:
  void lock();
  void check_entries() const;
  void tidy_for_resume();
  std::vector<std::string> earlier_run() const;

  std::filesystem::path dir_;  // empty: write nothing
  bool writer_, overwrite_;
  std::unique_ptr<FolderLock> lock_;
  std::filesystem::path parked_;  // the run --overwrite moved aside, deleted at the first checkpoint
};

// The checkpoint folder to resume from: checkpoint/, else checkpoint.old/
// (a kill between the two renames of a save), else none (an empty path).
std::filesystem::path find_checkpoint(const std::filesystem::path& run);

// While a run writes its folder: SIGINT and SIGTERM ask the loop to stop
// (stop_signal() returns the signal; a second one acts as usual), SIGXFSZ is
// ignored so that a file size limit comes back as a failed write. The
// previous handlers return afterwards.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_xfsz_ {};
};
// The signal that asked the run to stop, or 0.
int stop_signal();

}  // namespace hkt::tasks::detail
