// resume() of a finished run (train_run.hpp): there is nothing to train, so neither the data
// set (minutes to generate or read for a large task) nor the test evaluation is needed. The
// checkpoint and best.safetensors are still checked as for any resume (a damaged one is
// refused with exit 2); then the summary.json of the run is the result.
#include "hkt/core/safetensors.hpp"
#include "hkt/tasks/experiment.hpp"
#include "train_run.hpp"

namespace hkt::tasks::detail {

namespace fs = std::filesystem;

bool Run::finished_already(Console& con, TrainResult& out) {
  // One process, a run of a fixed number of steps (an epoch count needs the data's size),
  // not lengthened, with a summary.json and a checkpoint.
  if (W.size > 1 || lengthened || cfg.steps <= 0 || !present(dir / "summary.json")) return false;
  const fs::path ck = checkpoint_to_resume(dir);
  if (ck.empty()) return false;
  try {
    const SafetensorsFile f = load_safetensors((ck / "model.safetensors").string());
    const auto it = f.metadata.find("hkt.model_config");
    if (it == f.metadata.end()) return false;  // the full path names what is missing
    mcfg = nn::ClassifierConfig::from_json(it->second);
  } catch (const Error& e) {
    throw InputError(str_cat("resume: ", e.what()));
  }
  // config.json must still describe this model (the fields the data fills in aside); if not,
  // the full path says how they differ.
  nn::ClassifierConfig want = cfg.model.config();
  want.vocab = mcfg.vocab, want.input_features = mcfg.input_features, want.classes = mcfg.classes;
  want.max_len = mcfg.max_len;
  if (want.to_json() != mcfg.to_json()) return false;
  build_model(Device::cpu());
  total = cfg.steps;
  restore_checked(ck);
  if (step != total) {  // not finished after all (a summary.json of an earlier length): the full path
    model.reset();
    opt.reset();
    step = 0, best_step = -1, best_val = -1.0, saved_step = -1;
    return false;
  }
  const RunSummary s = read_summary(dir.string());
  out.completed = true;
  out.steps = step;
  out.params = s.params;
  out.best_step = s.best_step;
  out.best_val_acc = s.best_val_acc;
  out.test_acc = s.test_acc;
  out.wall_s = s.wall_s;
  out.s_per_step = s.s_per_step;
  con.line(str_cat("resume: '", dir.string(), "' is finished (step ", step, " of ", total, "; its summary.json: ",
                   "test acc ", fmt(s.test_acc), " of the best model, step ", s.best_step,
                   "); nothing to train (--steps N trains it further)"));
  return true;
}

}  // namespace hkt::tasks::detail
