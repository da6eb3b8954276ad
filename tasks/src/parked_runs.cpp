// --overwrite as a transaction: parked runs (hkt/tasks/parked_runs.hpp).
#include "hkt/tasks/parked_runs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/core/safe_open.hpp"
#include "hkt/tasks/files.hpp"
#include "run_folder.hpp"

namespace hkt::tasks {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using detail::present;

namespace {

constexpr const char* kKind = "hkt-replaced-run";

std::function<void(std::string_view)>& hook() {
  static std::function<void(std::string_view)> h;
  return h;
}
void step(std::string_view s) {
  if (hook()) hook()(s);
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool simple_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos &&
         s != kParkedMarker;
}

void write_marker(const ParkedRun& r) {
  json j;
  j["kind"] = kKind;
  j["what"] = "an hkt run that --overwrite moved aside from the folder above; deleted by the run that replaced it at "
              "its first checkpoint, else kept";
  j["version"] = 1;
  j["state"] = r.state;
  j["by_pid"] = r.by_pid;
  j["at"] = r.at;
  j["files"] = r.files;
  write_file_atomic(r.path / kParkedMarker, j.dump(2) + "\n");
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// How to get a kept run back.
std::string kept_note(const ParkedRun& r, const fs::path& dir) {
  return str_cat("'", r.path.string(), "' holds a run (", list(r.files), ") that --overwrite (pid ", r.by_pid, ", ",
                 r.at, ") moved aside and that was not deleted; it is kept. To continue it, move its files back into '",
                 dir.string(), "' (after moving the newer run's away); to drop it, delete the folder");
}

// The entries of a parked folder other than its marker (and the marker's temporary).
std::vector<fs::path> contents(const fs::path& p) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p, ec)) {
    const std::string n = e.path().filename().string();
    if (n != kParkedMarker && n != std::string(kParkedMarker) + ".tmp") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void finish_delete(const fs::path& p) {
  for (const fs::path& e : contents(p)) {
    std::error_code ec;
    fs::remove_all(e, ec);
    HKT_CHECK(!ec, "cannot delete '", e.string(), "' of the replaced run: ", ec.message());
    step("removed " + e.filename().string());
  }
  std::error_code ec;
  fs::remove(p / (std::string(kParkedMarker) + ".tmp"), ec);
  fs::remove(p / kParkedMarker, ec);
  HKT_CHECK(!ec, "cannot delete '", (p / kParkedMarker).string(), "': ", ec.message());
  step("marker removed");
  fs::remove(p, ec);  // an empty folder
  step("rmdir");
}

// A park a kill interrupted: the new run had not started, so its files go back.
void put_back(const ParkedRun& r, const fs::path& dir, std::vector<std::string>& notes) {
  std::vector<std::string> in_the_way;
  for (const std::string& f : r.files) {
    const fs::path src = r.path / f, dst = dir / f;
    if (!present(src)) continue;
    if (present(dst)) {
      in_the_way.push_back(f);
      continue;
    }
    std::error_code ec;
    fs::rename(src, dst, ec);
    if (ec) {
      in_the_way.push_back(f + " (" + ec.message() + ")");
      continue;
    }
    step("put back " + f);
  }
  if (!in_the_way.empty()) {
    notes.push_back(str_cat("'", r.path.string(), "' holds part of a run that an interrupted --overwrite (pid ",
                            r.by_pid, ", ", r.at, ") was moving aside; ", list(in_the_way),
                            " could not go back into '", dir.string(), "' (a file is in the way); it is kept as it is"));
    return;
  }
  std::error_code ec;
  fs::remove(r.path / (std::string(kParkedMarker) + ".tmp"), ec);
  fs::remove(r.path / kParkedMarker, ec);
  step("marker removed");
  fs::remove(r.path, ec);
  step("rmdir");
  notes.push_back(str_cat("an --overwrite (pid ", r.by_pid, ", ", r.at, ") was stopped while it moved the run in '",
                          dir.string(), "' aside; its files (", list(r.files), ") are back in place"));
}

}  // namespace

void set_parked_runs_hook(std::function<void(std::string_view)> h) { hook() = std::move(h); }

bool read_parked_marker(const fs::path& p, ParkedRun& out, std::string* why) {
  const fs::path m = p / kParkedMarker;
  if (why) why->clear();
  if (!present(m)) return false;
  try {
    const std::string what = non_regular_entry(m.string());
    HKT_CHECK(what.empty(), "it is ", what);
    const std::string text = read_text_file(m, 1 << 20);
    check_json_text(text, m.string());
    const json j = json::parse(text);
    HKT_CHECK(j.is_object() && j.value("kind", json()) == kKind, "not an hkt marker");
    const json st = j.value("state", json()), files = j.value("files", json()), pid = j.value("by_pid", json());
    HKT_CHECK(st == "moving" || st == "parked" || st == "deleting", "unknown state");
    HKT_CHECK(files.is_array() && pid.is_number_integer(), "no file list or pid");
    ParkedRun r;
    r.path = p;
    r.state = st.get<std::string>();
    r.by_pid = pid.get<int64_t>();
    r.at = j.value("at", json("")).is_string() ? j.value("at", std::string()) : std::string();
    for (const json& f : files) {
      HKT_CHECK(f.is_string() && simple_name(f.get<std::string>()), "a file name that is not a plain name");
      r.files.push_back(f.get<std::string>());
    }
    out = std::move(r);
    return true;
  } catch (const std::exception& e) {
    if (why) *why = str_cat("its marker '", m.string(), "' is not valid: ", excerpt(e.what()));
    return false;
  }
}

std::vector<ParkedRun> tidy_parked_runs(const fs::path& dir, std::vector<std::string>& notes) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  HKT_CHECK(!ec, "cannot list the run folder '", dir.string(), "': ", ec.message());
  std::sort(entries.begin(), entries.end());
  std::vector<ParkedRun> kept;
  for (const fs::path& p : entries) {
    const std::string name = p.filename().string();
    const bool named_like = name.rfind("replaced", 0) == 0;
    std::error_code e2;
    const bool is_dir = fs::symlink_status(p, e2).type() == fs::file_type::directory;
    ParkedRun r;
    std::string why;
    if (is_dir && read_parked_marker(p, r, &why)) {
      if (r.state == "moving") {
        put_back(r, dir, notes);
      } else if (r.state == "deleting") {
        finish_delete(p);
        notes.push_back(str_cat("finished deleting '", p.string(), "', a replaced run whose deletion was stopped"));
      } else {
        kept.push_back(r);
        notes.push_back(kept_note(r, dir));
      }
    } else if (named_like) {
      if (is_dir && why.empty() && fs::is_empty(p, e2)) {
        fs::remove(p, e2);  // an empty folder: nothing to lose
        continue;
      }
      notes.push_back(str_cat("'", p.string(), "' is not a run hkt moved aside (",
                              why.empty() ? std::string("no marker ") + kParkedMarker : why,
                              "); left as it is"));
    }
  }
  return kept;
}

fs::path park_run(const fs::path& dir, const std::vector<std::string>& files) {
  ParkedRun r;
  r.by_pid = ::getpid();
  r.at = now_utc();
  r.files = files;
  for (int n = 0;; ++n) {
    const fs::path p = dir / str_cat("replaced.", r.by_pid, ".", n);
    if (::mkdir(p.c_str(), 0755) == 0) {
      r.path = p;
      break;
    }
    HKT_CHECK(errno == EEXIST && n < 1000, "--overwrite: cannot create '", p.string(), "': ", std::strerror(errno));
  }
  step("mkdir");
  r.state = "moving";
  write_marker(r);
  step("marker moving");
  for (const std::string& f : files) {
    std::error_code ec;
    fs::rename(dir / f, r.path / f, ec);
    HKT_CHECK(!ec, "--overwrite: cannot move '", (dir / f).string(), "' aside to '", (r.path / f).string(),
              "': ", ec.message(), " (what was moved goes back at the next --overwrite or --resume)");
    step("moved " + f);
  }
  r.state = "parked";
  write_marker(r);
  step("marker parked");
  return r.path;
}

void delete_parked_run(const fs::path& p) {
  ParkedRun r;
  std::string why;
  HKT_CHECK(read_parked_marker(p, r, &why) && (r.state == "parked" || r.state == "deleting"), "refusing to delete '",
            p.string(), "': not a run hkt moved aside", why.empty() ? "" : " (" + why + ")");
  r.state = "deleting";
  write_marker(r);
  step("marker deleting");
  finish_delete(p);
}

fs::path overwrite_run(const fs::path& dir, const std::vector<std::string>& run_files,
                       std::vector<std::string>& notes) {
  std::vector<ParkedRun> kept = tidy_parked_runs(dir, notes);
  std::vector<std::string> found;
  for (const std::string& f : run_files)
    if (present(dir / f)) found.push_back(f);
  // Nothing here and nothing parked: a fresh folder. Nothing here but one parked run:
  // an --overwrite stopped right after parking it, which this run takes over below.
  if (found.empty() && kept.size() != 1) return {};
  static const char* kEarly[] = {"config.json", "metrics.jsonl", "data.json", "checkpoint.tmp", "checkpoint.trash"};
  const bool early = std::all_of(found.begin(), found.end(), [](const std::string& f) {
    return std::any_of(std::begin(kEarly), std::end(kEarly), [&](const char* e) { return f == e; });
  });
  if (early && kept.size() == 1) {
    ParkedRun r = kept[0];
    const std::string kept_prefix = "'" + r.path.string() + "' holds a run";
    notes.erase(std::remove_if(notes.begin(), notes.end(),
                               [&](const std::string& n) { return n.rfind(kept_prefix, 0) == 0; }),
                notes.end());
    r.by_pid = ::getpid();
    write_marker(r);
    step("taken over");
    for (const std::string& f : found) {
      std::error_code ec;
      fs::remove_all(dir / f, ec);
      HKT_CHECK(!ec, "--overwrite: cannot delete '", (dir / f).string(), "': ", ec.message());
      step("discarded " + f);
    }
    notes.push_back(str_cat("'", dir.string(), "' held ",
                            found.empty() ? std::string("no run")
                                          : "only the start of a run stopped before its first checkpoint (" +
                                                list(found) + "), now deleted",
                            "; the run an --overwrite moved aside stays in '", r.path.string(),
                            "' until this run's first checkpoint, which deletes it"));
    return r.path;
  }
  const fs::path p = park_run(dir, found);
  notes.push_back(str_cat("--overwrite: the run in '", dir.string(), "' (", list(found), ") is moved aside to '",
                          p.string(), "'; it is deleted at this run's first checkpoint, and kept if this run stops "
                          "before it"));
  return p;
}

}  // namespace hkt::tasks
