#include "run_folder.hpp"

#include <cmath>

#include "hkt/core/json_read.hpp"

#include "hkt/tasks/train.hpp"

using hkt::tasks::InputError;

namespace hkt::tasks::detail {

namespace fs = std::filesystem;

namespace {
volatile sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }
}  // namespace

int stop_signal() { return g_stop_signal; }

bool present(const fs::path& p) {
  std::error_code ec;
  const fs::file_type t = fs::symlink_status(p, ec).type();
  return !ec && t != fs::file_type::not_found && t != fs::file_type::none;
}

void check_run_folder(const fs::path& dir, const char* who) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw InputError(str_cat(who, ": the run folder '", dir.string(), "': ", ec.message()));
  if (!ec && !fs::is_directory(st))
    throw InputError(str_cat(who, ": the run folder '", dir.string(), "' is not a folder"));
}

fs::path checkpoint_to_resume(const fs::path& run) {
  for (const char* name : {"checkpoint", "checkpoint.old"}) {
    const fs::path ck = run / name;
    if (!present(ck)) continue;
    std::error_code ec;
    if (!fs::is_directory(ck, ec))
      throw InputError(str_cat("resume: '", ck.string(), "' is not a checkpoint folder (",
                               fs::is_symlink(fs::symlink_status(ck, ec)) ? "a link to nothing" : "not a folder",
                               "); refusing to start the run again from step 0"));
    for (const char* f : {"model.safetensors", "optimizer.safetensors"})
      if (!fs::is_regular_file(ck / f, ec))
        throw InputError(str_cat("resume: '", (ck / f).string(), "' is missing (a damaged checkpoint); refusing to "
                                 "start the run again from step 0"));
    return ck;
  }
  if (present(run / "summary.json"))
    throw InputError(str_cat("resume: '", run.string(), "' holds a finished run (summary.json) but no checkpoint/; "
                             "refusing to start it again from step 0"));
  return {};
}

int64_t metadata_int(const std::string& s, const fs::path& ck, const char* key) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  HKT_CHECK(used == s.size() && used > 0, "'", ck.string(), "': metadata '", key, "' = '", excerpt(s),
            "' is not an integer");
  return v;
}

double metadata_double(const std::string& s, const fs::path& ck, const char* key) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  HKT_CHECK(used == s.size() && used > 0 && std::isfinite(v), "'", ck.string(), "': metadata '", key, "' = '",
            excerpt(s), "' is not a finite number");
  return v;
}

StopSignals::StopSignals() {
  g_stop_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGXFSZ, &ign, &old_xfsz_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGXFSZ, &old_xfsz_, nullptr);
}

}  // namespace hkt::tasks::detail
