// The run folder of a training run (RunFolder, run_folder.hpp; the files are
// listed in train.hpp): creating and locking it, refusing or moving aside an
// earlier run, metrics.jsonl, what --resume tidies. Its checkpoints are
// Checkpoints' (checkpoints.cpp).
#include <iostream>
#include <sstream>

#include "hkt/core/json_read.hpp"
#include "hkt/core/safe_open.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/parked_runs.hpp"
#include "run_folder.hpp"

namespace hkt::tasks::detail {

namespace fs = std::filesystem;

namespace {

// What tidy_parked_runs() and overwrite_run() found: on stderr, whatever --quiet says.
void say(const std::vector<std::string>& notes) {
  for (const std::string& n : notes) std::cerr << "note: " << n << "\n";
  std::cerr.flush();
}

}  // namespace

fs::path find_checkpoint(const fs::path& run) {
  for (const char* name : {"checkpoint", "checkpoint.old"}) {
    std::error_code ec;
    if (fs::exists(run / name / "model.safetensors", ec) && fs::exists(run / name / "optimizer.safetensors", ec))
      return run / name;
  }
  return {};
}

RunFolder::RunFolder(fs::path dir, bool overwrite)
    : dir_(std::move(dir)), writer_(world().rank == 0), overwrite_(overwrite) {}

// Appends an event; a failed append stops the run (the last checkpoint is kept).
void RunFolder::metric(const json& j, int64_t step) {
  if (!writes()) return;
  try {
    append_file(dir_ / "metrics.jsonl", j.dump() + "\n");
  } catch (const Error& e) {
    throw Error(str_cat("train: step ", step, ": ", e.what(), "; stopping. ", kept_checkpoint()));
  }
}

void RunFolder::write(const std::string& name, const std::string& text) const {
  if (writes()) write_file_atomic(dir_ / name, text);
}

std::string RunFolder::kept_checkpoint() const {
  const fs::path ck = dir_.empty() ? fs::path() : find_checkpoint(dir_);
  return ck.empty() ? std::string("No checkpoint was written yet.")
                    : str_cat("The last checkpoint, '", ck.string(), "', is kept; --resume continues from it.");
}

// The files of a run already in the folder (none: a fresh folder).
std::vector<std::string> RunFolder::earlier_run() const {
  std::vector<std::string> found;
  for (const char* f : kRunFiles)
    if (present(dir_ / f)) found.push_back(f);
  return found;
}
void RunFolder::refuse_earlier_run() const {
  check_run_folder(dir_, "train");
  const std::vector<std::string> found = earlier_run();
  if (found.empty() || overwrite_) return;
  std::string list;
  for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
  throw InputError(str_cat("train: '", dir_.string(), "' already holds a run (", list, "); continue it with --resume ",
                           dir_.string(), ", choose another --run-dir, or give --overwrite to replace it"));
}

// A fresh run's folder, once setup() has checked the data and the settings (an
// input error leaves an earlier run's folder as it was): created and locked;
// an earlier run in it is refused, or with RunOptions::overwrite moved aside
// (hkt/tasks/parked_runs.hpp: deleted at this run's first checkpoint, kept if
// it stops before); config.json written.
void RunFolder::start(const TrainConfig& cfg) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw InputError(str_cat("train: cannot create the run folder '", dir_.string(), "': ", ec.message()));
  lock();
  std::vector<std::string> notes;
  if (!overwrite_) {
    (void)tidy_parked_runs(dir_, notes);  // an interrupted --overwrite is put back (and then refused below)
    say(notes);
    refuse_earlier_run();  // again, now that the folder is ours
  } else {
    try {
      parked_ = overwrite_run(dir_, std::vector<std::string>(std::begin(kRunFiles), std::end(kRunFiles)), notes);
    } catch (...) {
      say(notes);
      throw;
    }
    say(notes);
  }
  write_file_atomic(dir_ / "config.json", cfg.to_json() + "\n");
}

void RunFolder::open_to_resume() {
  lock();
  check_entries();
  tidy_for_resume();
}

// An interrupted --overwrite is put back or finished; a run that has no checkpoint
// yet next to exactly one parked run is the run that replaced it, and deletes it at
// its first checkpoint (as it would have).
void RunFolder::tidy_for_resume() {
  std::vector<std::string> notes;
  const std::vector<ParkedRun> kept = tidy_parked_runs(dir_, notes);
  if (kept.size() == 1 && !present(dir_ / "checkpoint") && !present(dir_ / "checkpoint.old")) {
    parked_ = kept[0].path;
    const std::string kept_prefix = str_cat("'", parked_.string(), "' holds a run");
    std::erase_if(notes, [&](const std::string& n) { return n.rfind(kept_prefix, 0) == 0; });
    notes.push_back(str_cat("this run (no checkpoint yet) replaced the run in '", parked_.string(),
                            "' (moved aside by --overwrite, pid ", kept[0].by_pid, ", ", kept[0].at,
                            "): it is deleted at this run's first checkpoint"));
  }
  say(notes);
}

void RunFolder::lock() {
  try {
    lock_ = std::make_unique<FolderLock>(dir_);
  } catch (const Error& e) {
    throw InputError(str_cat("train: ", e.what()));
  }
}

// Before a run writes into a folder it did not create: every file it writes
// there (and the temporary each is written through) is missing or a regular
// file; a link, FIFO or folder in its place is bad input (InputError, exit 2),
// named, and nothing is written through it (the opens use O_NOFOLLOW too, for
// what appears later).
void RunFolder::check_entries() const {
  for (const char* f : kRunFiles) {
    const std::string name = f;
    if (name.rfind("checkpoint", 0) == 0) continue;  // folders, renamed whole, never written through
    for (const std::string& p : {(dir_ / name).string(), (dir_ / name).string() + ".tmp"}) {
      try {
        refuse_non_regular(p, "train");
      } catch (const Error& e) {
        throw InputError(e.what());
      }
    }
  }
}

void RunFolder::keep_metrics_until(int64_t step) {
  if (!writes() || !present(dir_ / "metrics.jsonl")) return;
  std::istringstream in(read_text_file(dir_ / "metrics.jsonl"));
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j;
    try {
      check_json_text(line, "metrics.jsonl");
      j = json::parse(line, nullptr, false);
    } catch (const Error&) {
      continue;
    }
    if (!j.is_object()) continue;
    const json ev = j.value("event", json()), st = j.value("step", json(0));
    if (ev == "test" || ev == "error" || !st.is_number_integer() || st.get<int64_t>() > step) continue;
    kept += line + "\n";
  }
  write_file_atomic(dir_ / "metrics.jsonl", kept);
}

// config.json records the new length (a later --resume continues to it); summary.json and
// test_predictions.csv of the shorter run go, as it is no longer finished.
void RunFolder::lengthen(const TrainConfig& cfg) {
  write_file_atomic(dir_ / "config.json", cfg.to_json() + "\n");
  std::error_code ec;
  fs::remove(dir_ / "summary.json", ec);
  fs::remove(dir_ / kTestPredictionsFile, ec);
}

// The run --overwrite moved aside (or the one this run took over), recognised by its marker,
// never by its name.
void RunFolder::drop_replaced() {
  delete_parked_run(parked_);
  parked_.clear();
}

}  // namespace hkt::tasks::detail
