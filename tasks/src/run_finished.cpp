// resume() of a finished run (train_run.hpp): there is nothing to train, so neither the data
// set (minutes to generate or read for a large task) nor the test evaluation is needed. The
// checkpoint and best.safetensors are still checked as for any resume (a damaged one is
// refused with exit 2); then the summary.json of the run is the result.
#include "hkt/core/safetensors.hpp"
#include "hkt/tasks/distributed.hpp"
#include "hkt/tasks/experiment.hpp"
#include "train_run.hpp"

namespace hkt::tasks::detail {

namespace fs = std::filesystem;

bool Run::finished_already(Console& con, Checkpoints& ck, TrainResult& out) {
  // One process, a run of a fixed number of steps (an epoch count needs the data's size),
  // not lengthened, with a summary.json and a checkpoint.
  const fs::path& dir = folder_.dir();
  if (world().size > 1 || lengthened_ || cfg_.steps <= 0 || !present(dir / "summary.json")) return false;
  const fs::path ck_dir = checkpoint_to_resume(dir);
  if (ck_dir.empty()) return false;
  try {
    const SafetensorsFile f = load_safetensors((ck_dir / "model.safetensors").string());
    const auto it = f.metadata.find("hkt.model_config");
    if (it == f.metadata.end()) return false;  // the full path names what is missing
    st_.mcfg = nn::ClassifierConfig::from_json(it->second);
  } catch (const Error& e) {
    throw InputError(str_cat("resume: ", e.what()));
  }
  // config.json must still describe this model (the fields the data fills in aside); if not,
  // the full path says how they differ.
  const nn::ClassifierConfig& m = st_.mcfg;
  nn::ClassifierConfig want = cfg_.model.config();
  want.vocab = m.vocab, want.input_features = m.input_features, want.classes = m.classes;
  want.max_len = m.max_len;
  if (want.to_json() != m.to_json()) return false;
  build_model(Device::cpu());
  st_.total = cfg_.steps;
  ck.restore_checked(ck_dir);
  if (st_.step != st_.total) {  // not finished after all (a summary.json of an earlier length): the full path
    st_ = TrainState();
    clock_ = RunClock();
    ck.forget();
    return false;
  }
  const RunSummary s = read_summary(dir.string());
  out.completed = true;
  out.steps = st_.step;
  out.params = s.params;
  out.best_step = s.best_step;
  out.best_val_acc = s.best_val_acc;
  out.test_acc = s.test_acc;
  out.wall_s = s.wall_s;
  out.s_per_step = s.s_per_step;
  con.line(str_cat("resume: '", dir.string(), "' is finished (step ", st_.step, " of ", st_.total, "; its summary.json: ",
                   "test acc ", fmt(s.test_acc), " of the best model, step ", s.best_step,
                   "); nothing to train (--steps N trains it further)"));
  return true;
}

}  // namespace hkt::tasks::detail
