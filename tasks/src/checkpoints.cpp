// The checkpoints of a training run (checkpoints.hpp): checkpoint/ written
// through checkpoint.tmp/ so that a kill never leaves a partial one, and
// --resume's restore from it.
#include "checkpoints.hpp"

#include "hkt/core/random.hpp"
#include "hkt/tasks/distributed.hpp"
#include "comm.hpp"
#include "train_run.hpp"

namespace hkt::tasks::detail {

namespace fs = std::filesystem;

nn::Metadata Checkpoints::metadata() const {
  nn::Metadata m;
  TrainConfig c = cfg_;  // where and how fast it ran does not change the result
  c.run_dir.clear();
  c.threads = 0;
  m["hkt.config"] = c.to_json();
  m["hkt.model_config"] = st_.mcfg.to_json();
  m["hkt.train.epoch"] = std::to_string(st_.step / st_.per_epoch);
  m["hkt.train.batch_in_epoch"] = std::to_string(st_.step % st_.per_epoch);
  m["hkt.train.best_step"] = std::to_string(st_.best_step);
  m["hkt.train.best_val_acc"] = exact(st_.best_val);
  return m;
}

void Checkpoints::save(bool drop_replaced) {
  check_ranks_agree(st_, folder_, "before a checkpoint");
  if (!folder_.writes()) return;
  const fs::path& dir = folder_.dir();
  const fs::path tmp = dir / "checkpoint.tmp", cur = dir / "checkpoint", old = dir / "checkpoint.old";
  fs::remove_all(tmp);
  try {
    nn::save_checkpoint(tmp.string(), *st_.model, *st_.opt, st_.step, metadata());
    // Timings differ between runs, so they live beside the tensors, not in their metadata.
    json state = {{"step", st_.step}, {"wall_s", clock_.wall()}, {"train_s", clock_.train_s()}};
    write_file_atomic(tmp / "state.json", state.dump(2) + "\n");
  } catch (const Error& e) {
    // A full disk (or a file size limit): the folder being written is dropped,
    // the previous checkpoint is left as it was.
    std::error_code ec;
    fs::remove_all(tmp, ec);
    const fs::path prev = find_checkpoint(dir);
    throw Error(str_cat("train: the checkpoint of step ", st_.step, " could not be written: ", e.what(), "; ",
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
  saved_step_ = st_.step;
  if (drop_replaced && folder_.replacing()) folder_.drop_replaced();
}

bool Checkpoints::save_at_stop() {
  if (world().size > 1 || folder_.none() || saved_step_ == st_.step || folder_.replacing()) return false;
  save(false);
  return true;
}

void Checkpoints::restore(Console& con) {
  const fs::path ck = checkpoint_to_resume(folder_.dir());
  if (ck.empty()) {
    con.line("resume: no checkpoint in '" + folder_.dir().string() +
             "' yet (stopped before its first); starting from step 0");
  } else {
    restore_checked(ck);
  }
  // Events after the checkpoint will be logged again; lines that do not parse (a torn last line) go.
  folder_.keep_metrics_until(st_.step);
  if (!ck.empty()) con.line("resume: continuing from step " + std::to_string(st_.step) + " (" + ck.string() + ")");
  check_ranks_agree(st_, folder_, "after resuming");
}

void Checkpoints::restore_checked(const fs::path& ck) {
  try {
    restore_from(ck);
    check_best();
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(str_cat("resume: ", e.what()));
  }
}

void Checkpoints::restore_from(const fs::path& ck) {
  const nn::Metadata md = nn::load_checkpoint(ck.string(), *st_.model, *st_.opt);
  auto need = [&](const std::string& k) -> const std::string& {
    auto it = md.find(k);
    HKT_CHECK(it != md.end(), "'", ck.string(), "' has no '", k, "' in its metadata");
    return it->second;
  };
  HKT_CHECK(need("hkt.model_config") == st_.mcfg.to_json(), "'", ck.string(),
            "' holds a different model config than ", (folder_.dir() / "config.json").string());
  int64_t& step = st_.step;
  step = metadata_int(need("hkt.step"), ck, "hkt.step");
  st_.best_step = metadata_int(need("hkt.train.best_step"), ck, "hkt.train.best_step");
  st_.best_val = metadata_double(need("hkt.train.best_val_acc"), ck, "hkt.train.best_val_acc");
  HKT_CHECK(step <= st_.total && st_.best_step >= -1 && st_.best_step <= step, "'", ck.string(), "': step ", step,
            ", best step ", st_.best_step, " do not fit a run of ", st_.total, " steps",
            step > st_.total ? " (--steps / --epochs can only lengthen a run)" : "");
  saved_step_ = step;
  const fs::path sp = ck / "state.json";
  if (present(sp)) {
    const json state = parse_json(read_text_file(sp, 1 << 20), sp.string());
    HKT_CHECK(state.is_object() && state.value("wall_s", json(0.0)).is_number() &&
                  state.value("train_s", json(0.0)).is_number(),
              "'", sp.string(), "' must be an object with numbers wall_s and train_s");
    clock_.prior_wall = state.value("wall_s", 0.0);
    clock_.prior_train = state.value("train_s", 0.0);
  }
}

// best.safetensors must hold the best model the checkpoint records (or one
// written after the checkpoint, which the resumed run writes again).
void Checkpoints::check_best() const {
  if (st_.best_step < 0) return;
  const fs::path bp = folder_.dir() / "best.safetensors";
  if (!present(bp))
    throw InputError(str_cat("resume: '", bp.string(), "' is missing; the checkpoint records the best model at step ",
                             st_.best_step));
  Generator gen(cfg_.seed);
  nn::SequenceClassifier best(st_.mcfg, &gen);
  const nn::Metadata md = nn::load_model(bp.string(), best);
  const auto it = md.find("hkt.step");
  HKT_CHECK(it != md.end(), "'", bp.string(), "' has no 'hkt.step' in its metadata");
  const int64_t bs = metadata_int(it->second, bp, "hkt.step");
  HKT_CHECK(bs == st_.best_step || bs > st_.step, "'", bp.string(), "' is the model of step ", bs,
            " but the checkpoint records the best model at step ", st_.best_step);
}

void check_ranks_agree(const TrainState& st, const RunFolder& folder, const char* when) {
  const World& w = world();
  if (w.size == 1) return;
  std::vector<Tensor> ts = st.model->parameters();
  const std::vector<uint64_t> sums = allgather_u64(checksum(ts));
  for (int r = 1; r < w.size; ++r)
    if (sums[static_cast<size_t>(r)] != sums[0])
      throw Error(str_cat("train: ", when, " (step ", st.step, "): the weights of rank ", r, " differ from rank 0's "
                          "(checksums ", sums[static_cast<size_t>(r)], " and ", sums[0],
                          "): the ranks diverged; stopping. ", folder.kept_checkpoint()));
}

}  // namespace hkt::tasks::detail
