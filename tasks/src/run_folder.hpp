// The rules of a run folder that train() and resume() (train.cpp) share:
// what a run writes there, which checkpoint --resume may continue from, and
// the signals a run turns into a clean stop. Internal to tasks/src.
#pragma once
#include <signal.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "hkt/tasks/train.hpp"

namespace hkt::tasks::detail {

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
// complete; without it, checkpoint.old/ (a kill between save_folder's two
// renames). Empty when the run has none yet (killed before its first
// checkpoint); InputError naming the file when one is damaged or missing.
std::filesystem::path checkpoint_to_resume(const std::filesystem::path& run);

// A checkpoint's metadata value `key` of the file `ck` as an integer / a
// finite number: the whole text, else hkt::Error naming file, key and value.
int64_t metadata_int(const std::string& s, const std::filesystem::path& ck, const char* key);
double metadata_double(const std::string& s, const std::filesystem::path& ck, const char* key);

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
