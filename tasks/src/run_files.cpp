// The run folder of a training run (train_run.hpp; the files are listed in
// train.hpp): creating and locking it, metrics.jsonl, checkpoints written so
// that a kill never leaves a partial one, resuming from them, data.json and
// summary.json.
#include <iostream>
#include <sstream>

#include "hkt/core/json_read.hpp"
#include "hkt/core/safe_open.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/ops/threads.hpp"
#include "hkt/tasks/parked_runs.hpp"
#include "train_run.hpp"

namespace hkt::tasks::detail {
namespace {

namespace fs = std::filesystem;

// The checkpoint folder to resume from: checkpoint/, else checkpoint.old/
// (a kill between the two renames of save_folder), else none.
fs::path find_checkpoint(const fs::path& run) {
  for (const char* name : {"checkpoint", "checkpoint.old"}) {
    std::error_code ec;
    if (fs::exists(run / name / "model.safetensors", ec) && fs::exists(run / name / "optimizer.safetensors", ec))
      return run / name;
  }
  return {};
}

json length_json(const LengthStats& st) {
  json h = json::array();
  for (const auto& [lo, n] : st.histogram) h.push_back(json{{"from", lo}, {"count", n}});
  return json{{"examples", st.n}, {"min", st.min}, {"p5", st.p5}, {"p25", st.p25}, {"median", st.median},
              {"p75", st.p75}, {"p95", st.p95}, {"max", st.max}, {"mean", st.mean},
              {"bin_width", st.bin_width}, {"histogram", h}};
}

}  // namespace

// Appends an event; a failed append stops the run (the last checkpoint is kept).
void Run::metric(const json& j) {
  if (dir.empty() || !writer()) return;
  try {
    append_file(dir / "metrics.jsonl", j.dump() + "\n");
  } catch (const Error& e) {
    throw Error(str_cat("train: step ", step, ": ", e.what(), "; stopping. ", kept_checkpoint()));
  }
}

// What a stopped run leaves to --resume.
std::string Run::kept_checkpoint() const {
  const fs::path ck = dir.empty() ? fs::path() : find_checkpoint(dir);
  return ck.empty() ? std::string("No checkpoint was written yet.")
                    : str_cat("The last checkpoint, '", ck.string(), "', is kept; --resume continues from it.");
}

nn::Metadata Run::metadata() const {
  nn::Metadata m;
  TrainConfig c = cfg;  // where and how fast it ran does not change the result
  c.run_dir.clear();
  c.threads = 0;
  m["hkt.config"] = c.to_json();
  m["hkt.model_config"] = mcfg.to_json();
  m["hkt.train.epoch"] = std::to_string(step / per_epoch);
  m["hkt.train.batch_in_epoch"] = std::to_string(step % per_epoch);
  m["hkt.train.best_step"] = std::to_string(best_step);
  m["hkt.train.best_val_acc"] = exact(best_val);
  return m;
}

void Run::save_folder(bool drop_replaced) {
  check_ranks_agree("before a checkpoint");
  if (dir.empty() || !writer()) return;
  const fs::path tmp = dir / "checkpoint.tmp", cur = dir / "checkpoint", old = dir / "checkpoint.old";
  fs::remove_all(tmp);
  try {
    nn::save_checkpoint(tmp.string(), *model, *opt, step, metadata());
    // Timings differ between runs, so they live beside the tensors, not in their metadata.
    json st = {{"step", step}, {"wall_s", wall()}, {"train_s", prior_train + seg_train}};
    write_file_atomic(tmp / "state.json", st.dump(2) + "\n");
  } catch (const Error& e) {
    // A full disk (or a file size limit): the folder being written is dropped,
    // the previous checkpoint is left as it was.
    std::error_code ec;
    fs::remove_all(tmp, ec);
    const fs::path prev = find_checkpoint(dir);
    throw Error(str_cat("train: the checkpoint of step ", step, " could not be written: ", e.what(), "; ",
                        prev.empty() ? std::string("there is no earlier checkpoint")
                                     : "the previous checkpoint '" + prev.string() + "' is kept"));
  }
  std::error_code ec;
  // A folder is renamed to checkpoint.trash before it is deleted, so that a kill
  // during the deletion never leaves part of a checkpoint under a name --resume reads.
  const auto discard = [&](const fs::path& p) {
    const fs::path trash = dir / "checkpoint.trash";
    fs::remove_all(trash);
    if (!fs::exists(p)) return;
    fs::rename(p, trash, ec);
    HKT_CHECK(!ec, "train: cannot rename '", p.string(), "' to '", trash.string(), "': ", ec.message());
    fs::remove_all(trash);
  };
  if (fs::exists(cur)) {
    discard(old);
    fs::rename(cur, old, ec);
    HKT_CHECK(!ec, "train: cannot rename '", cur.string(), "': ", ec.message());
  }
  fs::rename(tmp, cur, ec);
  HKT_CHECK(!ec, "train: cannot rename '", tmp.string(), "' to '", cur.string(), "': ", ec.message());
  discard(old);
  saved_step = step;
  // The run --overwrite moved aside goes once this one has a checkpoint it reached by itself (not
  // the one a stop writes): the one this run moved (or took over), recognised by its marker, never
  // by its name.
  if (drop_replaced && !parked.empty()) {
    delete_parked_run(parked);
    parked.clear();
  }
}

// Restores model, optimizer, generator and the loop's state from the last checkpoint.
// A damaged, missing or inconsistent checkpoint or best model is bad input
// (InputError, exit status 2), never a reason to start again from step 0.
void Run::restore(Console& con) {
  restore_checkpoint(con);
  check_ranks_agree("after resuming");
}
void Run::restore_checkpoint(Console& con) {
  const fs::path ck = checkpoint_to_resume(dir);
  if (ck.empty()) {
    con.line("resume: no checkpoint in '" + dir.string() + "' yet (stopped before its first); starting from step 0");
  } else {
    restore_checked(ck);
  }
  // Events after the checkpoint will be logged again; lines that do not parse (a torn last line) go.
  if (writer() && present(dir / "metrics.jsonl")) {
    std::istringstream in(read_text_file(dir / "metrics.jsonl"));
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
    write_file_atomic(dir / "metrics.jsonl", kept);
  }
  if (!ck.empty()) con.line("resume: continuing from step " + std::to_string(step) + " (" + ck.string() + ")");
}

void Run::restore_checked(const fs::path& ck) {
  try {
    restore_from(ck);
    check_best();
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(str_cat("resume: ", e.what()));
  }
}

void Run::restore_from(const fs::path& ck) {
  const nn::Metadata md = nn::load_checkpoint(ck.string(), *model, *opt);
  auto need = [&](const std::string& k) -> const std::string& {
    auto it = md.find(k);
    HKT_CHECK(it != md.end(), "'", ck.string(), "' has no '", k, "' in its metadata");
    return it->second;
  };
  HKT_CHECK(need("hkt.model_config") == mcfg.to_json(), "'", ck.string(),
            "' holds a different model config than ", (dir / "config.json").string());
  step = metadata_int(need("hkt.step"), ck, "hkt.step");
  best_step = metadata_int(need("hkt.train.best_step"), ck, "hkt.train.best_step");
  best_val = metadata_double(need("hkt.train.best_val_acc"), ck, "hkt.train.best_val_acc");
  HKT_CHECK(step <= total && best_step >= -1 && best_step <= step, "'", ck.string(), "': step ", step,
            ", best step ", best_step, " do not fit a run of ", total, " steps",
            step > total ? " (--steps / --epochs can only lengthen a run)" : "");
  saved_step = step;
  const fs::path sp = ck / "state.json";
  if (present(sp)) {
    const json st = parse_json(read_text_file(sp, 1 << 20), sp.string());
    HKT_CHECK(st.is_object() && st.value("wall_s", json(0.0)).is_number() &&
                  st.value("train_s", json(0.0)).is_number(),
              "'", sp.string(), "' must be an object with numbers wall_s and train_s");
    prior_wall = st.value("wall_s", 0.0);
    prior_train = st.value("train_s", 0.0);
  }
}
// best.safetensors must hold the best model the checkpoint records (or one
// written after the checkpoint, which the resumed run writes again).
void Run::check_best() const {
  if (best_step < 0) return;
  const fs::path bp = dir / "best.safetensors";
  if (!present(bp))
    throw InputError(str_cat("resume: '", bp.string(), "' is missing; the checkpoint records the best model at step ",
                             best_step));
  Generator gen(cfg.seed);
  nn::SequenceClassifier best(mcfg, &gen);
  const nn::Metadata md = nn::load_model(bp.string(), best);
  const auto it = md.find("hkt.step");
  HKT_CHECK(it != md.end(), "'", bp.string(), "' has no 'hkt.step' in its metadata");
  const int64_t bs = metadata_int(it->second, bp, "hkt.step");
  HKT_CHECK(bs == best_step || bs > step, "'", bp.string(), "' is the model of step ", bs,
            " but the checkpoint records the best model at step ", best_step);
}

// resume() to more steps: config.json records the new length (a later --resume continues to it);
// summary.json and test_predictions.csv of the shorter run go, as it is no longer finished.
void Run::lengthen(Console& con) {
  write_file_atomic(dir / "config.json", cfg.to_json() + "\n");
  std::error_code ec;
  fs::remove(dir / "summary.json", ec);
  fs::remove(dir / kTestPredictionsFile, ec);
  con.line(str_cat("resume: training to step ", total, " (", opt->schedule()->str(), ", the schedule of a run of ", total,
                   " steps)"));
}

// The files of a run already in the folder (none: a fresh folder).
std::vector<std::string> Run::earlier_run() const {
  std::vector<std::string> found;
  for (const char* f : kRunFiles)
    if (present(dir / f)) found.push_back(f);
  return found;
}
void Run::refuse_earlier_run() const {
  check_run_folder(dir, "train");
  const std::vector<std::string> found = earlier_run();
  if (found.empty() || ropt.overwrite) return;
  std::string list;
  for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
  throw InputError(str_cat("train: '", dir.string(), "' already holds a run (", list, "); continue it with --resume ",
                           dir.string(), ", choose another --run-dir, or give --overwrite to replace it"));
}

// A fresh run's folder, once setup() has checked the data and the settings (an
// input error leaves an earlier run's folder as it was): created and locked;
// an earlier run in it is refused, or with RunOptions::overwrite moved aside
// (hkt/tasks/parked_runs.hpp: deleted at this run's first checkpoint, kept if
// it stops before); config.json written.
void Run::start_folder() {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(str_cat("train: cannot create the run folder '", dir.string(), "': ", ec.message()));
  lock_folder();
  std::vector<std::string> notes;
  if (!ropt.overwrite) {
    (void)tidy_parked_runs(dir, notes);  // an interrupted --overwrite is put back (and then refused below)
    say(notes);
    refuse_earlier_run();  // again, now that the folder is ours
  } else {
    try {
      parked = overwrite_run(dir, std::vector<std::string>(std::begin(kRunFiles), std::end(kRunFiles)), notes);
    } catch (...) {
      say(notes);
      throw;
    }
    say(notes);
  }
  write_file_atomic(dir / "config.json", cfg.to_json() + "\n");
}

// What tidy_parked_runs() and overwrite_run() found: on stderr, whatever --quiet says.
void Run::say(const std::vector<std::string>& notes) const {
  for (const std::string& n : notes) std::cerr << "note: " << n << "\n";
  std::cerr.flush();
}

// --resume, once the folder is locked: an interrupted --overwrite is put back or
// finished; a run that has no checkpoint yet next to exactly one parked run is the
// run that replaced it, and deletes it at its first checkpoint (as it would have).
void Run::tidy_for_resume() {
  std::vector<std::string> notes;
  const std::vector<ParkedRun> kept = tidy_parked_runs(dir, notes);
  if (kept.size() == 1 && !present(dir / "checkpoint") && !present(dir / "checkpoint.old")) {
    parked = kept[0].path;
    const std::string kept_prefix = "'" + parked.string() + "' holds a run";
    std::erase_if(notes, [&](const std::string& n) { return n.rfind(kept_prefix, 0) == 0; });
    notes.push_back(str_cat("this run (no checkpoint yet) replaced the run in '", parked.string(),
                            "' (moved aside by --overwrite, pid ", kept[0].by_pid, ", ", kept[0].at,
                            "): it is deleted at this run's first checkpoint"));
  }
  say(notes);
}

void Run::lock_folder() {
  try {
    lock = std::make_unique<FolderLock>(dir);
  } catch (const Error& e) {
    throw InputError(str_cat("train: ", e.what()));
  }
}

// Before a run writes into a folder it did not create: every file it writes
// there (and the temporary each is written through) is missing or a regular
// file; a link, FIFO or folder in its place is bad input (InputError, exit 2),
// named, and nothing is written through it (the opens use O_NOFOLLOW too, for
// what appears later).
void Run::check_entries() const {
  for (const char* f : kRunFiles) {
    const std::string name = f;
    if (name.rfind("checkpoint", 0) == 0) continue;  // folders, renamed whole, never written through
    for (const std::string& p : {(dir / name).string(), (dir / name).string() + ".tmp"}) {
      try {
        refuse_non_regular(p, "train");
      } catch (const Error& e) {
        throw InputError(e.what());
      }
    }
  }
}

// The data's shape, per split (the length distribution above all): data.json
// in the run folder and one console line per split.
void Run::describe_data(Console& con) {
  json j;
  j["task"] = cfg.task;
  j["seq_len"] = data.train.seq_len;
  for (const Dataset* d : {&data.train, &data.val, &data.test}) {
    const LengthStats st = length_stats(*d, 16);
    con.line("lengths " + d->name + ": " + st.str());
    const size_t slash = d->name.rfind('/');
    j[slash == std::string::npos ? d->name : d->name.substr(slash + 1)] = length_json(st);
  }
  if (!dir.empty() && writer()) write_file_atomic(dir / "data.json", j.dump(2) + "\n");
  // The text task: how new inputs are read the same way (tokeniser, vocabulary, class names), for
  // hkt-eval and hkt-predict.
  if (!data.encoding.empty() && !dir.empty() && writer()) write_file_atomic(dir / "encoding.json", data.encoding);
}

// summary.json: the run's settings and results.
void Run::write_summary(const TrainResult& r, double train_s) const {
  if (dir.empty() || !writer()) return;
  json s;
  s["config"] = config_json(cfg);
  s["model_config"] = json::parse(mcfg.to_json());
  s["params"] = r.params;
  s["steps"] = step;
  s["best_step"] = best_step;
  s["best_val_acc"] = best_val;
  s["test_acc"] = r.test_acc;
  s["test_loss"] = r.test_loss;
  s["test_examples"] = data.test.size();
  s["final_val_acc"] = final_val;
  s["wall_s"] = r.wall_s;
  s["train_s"] = train_s;
  s["s_per_step"] = r.s_per_step;
  // The memory estimate the run was checked against and the process's measured peak
  // (docs/tasks.md, "Memory"; on a GPU the estimate counts the host's share only).
  s["memory_estimate_bytes"] = mem_estimate.total();
  s["peak_rss_bytes"] = peak_rss();
  s["device"] = ropt.device.str();  // the time per step belongs to the device (the last segment's)
  // The CPU threads of the last segment: OpenBLAS's count changes the last bits of large
  // products (docs/design.md, "Determinism"), so repeating a run's bits needs it.
  s["threads"] = get_num_threads();
  s["blas_threads"] = get_blas_num_threads();
  // Data parallel: processes, and this segment's time waiting for the gradients' and metrics'
  // all-reduces after the backward (what overlap did not hide), and its share of the steps' time.
  s["ranks"] = W.size;
  s["comm_wait_s"] = dp.comm_s;
  s["comm_share"] = seg_train > 0 ? dp.comm_s / seg_train : 0.0;
  write_file_atomic(dir / "summary.json", s.dump(2) + "\n");
}

}  // namespace hkt::tasks::detail
