// --overwrite as a transaction (hkt/tasks/parked_runs.hpp): a process killed
// between any two steps of moving a run aside, starting the new run and deleting
// the old one at its first checkpoint never loses a run; leftovers (a file or
// folder named `replaced`, stale parked runs) are never taken for a parked run.
// The kill is real: the sequence runs in a forked child that _exit()s at the
// step the test seam (set_parked_runs_hook) names.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "helpers/temp_dir.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/parked_runs.hpp"

using namespace hkt::tasks;
using hkt::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kNames = {"config.json",      "metrics.jsonl",    "checkpoint",  "checkpoint.tmp",
                                         "checkpoint.old",   "checkpoint.trash", "data.json",   "best.safetensors",
                                         "summary.json"};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void put(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// A finished run `id`: every file says whose it is.
void finished_run(const fs::path& d, const std::string& id) {
  put(d / "config.json", "cfg " + id);
  put(d / "metrics.jsonl", "m " + id);
  put(d / "checkpoint" / "model.safetensors", "ck " + id);
  put(d / "best.safetensors", "best " + id);
  put(d / "summary.json", id);
}
bool whole_run_at(const fs::path& d, const std::string& id) {
  return slurp(d / "config.json") == "cfg " + id && slurp(d / "metrics.jsonl") == "m " + id &&
         slurp(d / "checkpoint" / "model.safetensors") == "ck " + id && slurp(d / "best.safetensors") == "best " + id &&
         slurp(d / "summary.json") == id;
}
// Where run `id` is, whole: the folder itself or a parked run (state "parked"); "" if nowhere.
std::string where(const fs::path& dir, const std::string& id) {
  if (whole_run_at(dir, id)) return dir.string();
  for (const auto& e : fs::directory_iterator(dir)) {
    ParkedRun r;
    if (e.is_directory() && read_parked_marker(e.path(), r) && r.state == "parked" && whole_run_at(e.path(), id))
      return e.path().string();
  }
  return "";
}

// The steps of the sequence below that are not parked_runs.cpp's own (the child's kill counts them too).
std::function<void(std::string_view)> g_step = [](std::string_view) {};

// What train() --overwrite does to the folder: move the old run aside, start
// the new one (config.json, metrics.jsonl), write its first checkpoint and the
// rest, delete the old run. Logs "deleting-id ID" before deleting a finished run.
void overwrite_sequence(const fs::path& dir, const std::string& id, const fs::path& log) {
  std::vector<std::string> notes;
  const fs::path p = overwrite_run(dir, kNames, notes);
  write_file_atomic(dir / "config.json", "cfg " + id);
  g_step("new config");
  append_file(dir / "metrics.jsonl", "m " + id);
  g_step("new metrics");
  put(dir / "checkpoint" / "model.safetensors", "ck " + id);
  put(dir / "best.safetensors", "best " + id);
  put(dir / "summary.json", id);
  std::ofstream(log, std::ios::app) << "new checkpoint " << id << "\n";
  g_step("new checkpoint");
  if (!p.empty()) {
    const std::string old = slurp(p / "summary.json");
    if (!old.empty()) std::ofstream(log, std::ios::app) << "deleting-id " << old << "\n";
    delete_parked_run(p);
  }
}

// Runs the sequence in a child killed (_exit) after its `kill_at`-th step (0: never);
// returns the number of steps it went through.
int run_killed(const fs::path& dir, const std::string& id, const fs::path& log, int kill_at) {
  const fs::path count = log.string() + ".steps";
  fs::remove(count);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int n = 0;
    g_step = [&](std::string_view s) {
      std::ofstream(count, std::ios::app) << s << "\n";
      if (++n == kill_at) ::_exit(9);
    };
    set_parked_runs_hook(g_step);
    try {
      overwrite_sequence(dir, id, log);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  REQUIRE(WIFEXITED(st));
  REQUIRE((WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 9));
  std::ifstream f(count);
  int n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

bool logged(const fs::path& log, const std::string& line) {
  std::ifstream f(log);
  for (std::string l; std::getline(f, l);)
    if (l == line) return true;
  return false;
}

// No marker left in a state a kill leaves ("moving", "deleting") once tidied.
void check_tidy(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    ParkedRun r;
    if (e.is_directory() && read_parked_marker(e.path(), r)) CHECK(r.state == "parked");
  }
}

}  // namespace

TEST_CASE("overwrite_run: a kill at every step loses no run, with or without leftovers") {
  // Leftovers: none; a file named replaced; an old-style replaced/ folder; a stale parked
  // run Y next to the finished run X (as a kill after a first checkpoint leaves it).
  for (int scenario = 0; scenario < 4; ++scenario) {
    CAPTURE(scenario);
    TempDir t("parked");
    const fs::path tmpl = t / "template", dir = t / "R", log = t / "log";
    finished_run(tmpl, "X");
    if (scenario == 1) put(tmpl / "replaced", "a user's file");
    if (scenario == 2) put(tmpl / "replaced" / "summary.json", "an older hkt's replaced run");
    if (scenario == 3) {  // Y parked, then X trained into the folder and finished
      finished_run(t / "y", "Y");
      std::vector<std::string> notes;
      const fs::path y = overwrite_run(t / "y", kNames, notes);
      REQUIRE(!y.empty());
      fs::rename(y, tmpl / y.filename());
      fs::remove_all(t / "y");
    }
    fs::copy(tmpl, dir, fs::copy_options::recursive);
    const int steps = run_killed(dir, "Z", log, 0);
    CHECK(steps >= 8);
    CHECK(whole_run_at(dir, "Z"));
    for (int k = 1; k <= steps; ++k) {
      CAPTURE(k);
      fs::remove_all(dir);
      fs::remove(log);
      fs::copy(tmpl, dir, fs::copy_options::recursive);
      run_killed(dir, "Z", log, k);
      std::vector<std::string> notes;
      (void)tidy_parked_runs(dir, notes);  // what the next --overwrite or --resume does first
      check_tidy(dir);
      if (!logged(log, "deleting-id X")) CHECK_MESSAGE(where(dir, "X") != "", "run X lost after a kill at step ", k);
      if (scenario == 3) CHECK_MESSAGE(where(dir, "Y") != "", "stale run Y lost after a kill at step ", k);
      if (scenario == 1) CHECK(slurp(dir / "replaced") == "a user's file");
      if (scenario == 2) CHECK(slurp(dir / "replaced" / "summary.json") == "an older hkt's replaced run");
      // A later --overwrite, not stopped: the new run Z2 is in place; Y is still kept.
      run_killed(dir, "Z2", log, 0);
      CHECK(whole_run_at(dir, "Z2"));
      if (scenario == 3) CHECK(where(dir, "Y") != "");
    }
  }
}

TEST_CASE("tidy_parked_runs: recognises parked runs by their marker only, and says what it found") {
  TempDir t("parked");
  const fs::path dir = t / "R";
  finished_run(dir, "X");
  put(dir / "replaced.1.0" / "summary.json", "not ours");  // a name like ours, no marker
  put(dir / "replaced.2.0" / kParkedMarker, "{\"kind\": \"something else\"}");
  std::vector<std::string> notes;
  const fs::path p = overwrite_run(dir, kNames, notes);
  REQUIRE(!p.empty());
  CHECK(where(dir, "X") == p.string());
  ParkedRun r;
  REQUIRE(read_parked_marker(p, r));
  CHECK(r.by_pid == ::getpid());
  CHECK(r.state == "parked");
  std::string all;
  for (const std::string& n : notes) all += n + "\n";
  CHECK(all.find("replaced.1.0' is not a run hkt moved aside (no marker") != std::string::npos);
  CHECK(all.find("replaced.2.0' is not a run hkt moved aside (its marker") != std::string::npos);
  CHECK(all.find("is moved aside to '" + p.string()) != std::string::npos);
  // Neither look-alike can be deleted as a parked run.
  CHECK_THROWS_WITH(delete_parked_run(dir / "replaced.1.0"), doctest::Contains("not a run hkt moved aside"));
  CHECK_THROWS_WITH(delete_parked_run(dir / "replaced.2.0"), doctest::Contains("not a run hkt moved aside"));
  CHECK(slurp(dir / "replaced.1.0" / "summary.json") == "not ours");
  // Found again later, the parked run is reported with how to get it back.
  notes.clear();
  const auto kept = tidy_parked_runs(dir, notes);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].path == p);
  all.clear();
  for (const std::string& n : notes) all += n + "\n";
  CHECK(all.find("it is kept. To continue it, move its files back") != std::string::npos);
  // Nothing in the folder but that parked run (an --overwrite stopped right after parking it):
  // the next --overwrite takes it over, to delete at its first checkpoint, instead of leaving it.
  notes.clear();
  CHECK(overwrite_run(dir, kNames, notes) == p);
  CHECK(where(dir, "X") == p.string());
  CHECK(notes.back().find("held no run; the run an --overwrite moved aside stays in '" + p.string()) !=
        std::string::npos);
}

TEST_CASE("parked runs, property: random kills and leftovers over many --overwrite runs lose no finished run") {
  std::mt19937 rng(20261206);
  for (int trial = 0; trial < 6; ++trial) {
    CAPTURE(trial);
    TempDir t("parked");
    const fs::path dir = t / "R", log = t / "log";
    finished_run(dir, "r0");
    std::set<std::string> precious = {"r0"};
    for (int gen = 1; gen <= 12; ++gen) {
      CAPTURE(gen);
      const int leftover = static_cast<int>(rng() % 5);
      if (leftover == 1 && !fs::exists(dir / "replaced")) put(dir / "replaced", "x");
      if (leftover == 2) put(dir / ("replaced.99999." + std::to_string(gen)) / "summary.json", "junk");
      const std::string id = "r" + std::to_string(gen);
      fs::remove(log);
      const int kill_at = static_cast<int>(rng() % 16);  // 0: not killed; past the end: not killed
      run_killed(dir, id, log, kill_at);
      if (logged(log, "new checkpoint " + id)) precious.insert(id);
      for (auto it = precious.begin(); it != precious.end();)
        it = logged(log, "deleting-id " + *it) ? precious.erase(it) : std::next(it);
      std::vector<std::string> notes;
      (void)tidy_parked_runs(dir, notes);
      check_tidy(dir);
      for (const std::string& p : precious) CHECK_MESSAGE(where(dir, p) != "", "run ", p, " lost");
    }
  }
}
