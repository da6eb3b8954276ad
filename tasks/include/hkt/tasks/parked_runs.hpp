// --overwrite as a transaction (docs/reliability.md, "--overwrite cannot lose a
// run"). The run a new one replaces is moved aside into a folder only this
// process made, RUN_DIR/replaced.<pid>.<n>/, whose marker file
// (HKT_REPLACED_RUN.json) says what it is, who moved it and in which state the
// move is; it is deleted only by the run that moved it (or took it over), at
// that run's first checkpoint. Folders are recognised by the marker, never by
// their name: a file or folder named `replaced` is left alone.
//
// Every step leaves something a later call can finish or undo:
//   park:    mkdir -> marker "moving" (with the file list) -> one rename per file -> marker "parked"
//   delete:  marker "deleting" -> the files removed -> the marker removed -> rmdir
// tidy_parked_runs() (run by train() with --overwrite and by resume() once they hold
// the folder's lock) moves the files of a "moving" park back (the new run had not
// started writing), finishes a "deleting" one, and reports every parked run it keeps.
// All of these must be called while holding the folder's FolderLock.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hkt::tasks {

inline constexpr const char* kParkedMarker = "HKT_REPLACED_RUN.json";

struct ParkedRun {
  std::filesystem::path path;
  std::string state;  // "moving", "parked" or "deleting"
  int64_t by_pid = 0;
  std::string at;  // UTC time of the move
  std::vector<std::string> files;
};

// The marker of folder `p`, or false when `p` holds none that is valid (then
// `why` says what is wrong, "" when there is no marker at all).
bool read_parked_marker(const std::filesystem::path& p, ParkedRun& out, std::string* why = nullptr);

// Finishes what a kill interrupted in `dir` (see above) and returns the parked
// runs it keeps (state "parked"), oldest name first. One line per thing found
// or done is appended to `notes` (a run put back, a deletion finished, a run
// kept and how to recover it, an entry named replaced* that has no marker).
std::vector<ParkedRun> tidy_parked_runs(const std::filesystem::path& dir, std::vector<std::string>& notes);

// Moves the entries `files` of `dir` into a new folder RUN_DIR/replaced.<pid>.<n>
// with its marker; returns that folder. hkt::Error naming the entry when a
// rename fails (what was moved stays recoverable by tidy_parked_runs()).
std::filesystem::path park_run(const std::filesystem::path& dir, const std::vector<std::string>& files);

// Deletes the parked run `p` (see above); refuses (hkt::Error) a folder whose
// marker is not a valid "parked" or "deleting" one.
void delete_parked_run(const std::filesystem::path& p);

// --overwrite, once the folder is locked: `found` are the entries of the run in
// `dir`. When they are only what a run writes before its first checkpoint
// (config.json, metrics.jsonl, data.json, checkpoint.tmp/.trash: a replacement
// that was stopped early), or there are none, and exactly one run is parked,
// that run stays parked and is taken over (the early files are deleted);
// otherwise the run in `dir` is parked (nothing, when there is none). Returns the parked folder the new run deletes at its first checkpoint;
// notes as for tidy_parked_runs().
std::filesystem::path overwrite_run(const std::filesystem::path& dir, const std::vector<std::string>& found,
                                    std::vector<std::string>& notes);

// A test seam: called after each step of the sequences above with the step's
// name ("mkdir", "marker moving", "moved config.json", ...), so that a test can
// stop the process between any two steps. Empty (the default): nothing is called.
void set_parked_runs_hook(std::function<void(std::string_view step)> hook);

}  // namespace hkt::tasks
