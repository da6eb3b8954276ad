// What a run writes about itself (train_run.hpp): data.json, the shape of the
// data, at the start, and summary.json, its settings and results, at the end.
#include "hkt/ops/threads.hpp"
#include "hkt/tasks/distributed.hpp"
#include "train_run.hpp"

namespace hkt::tasks::detail {
namespace {

json length_json(const LengthStats& st) {
  json h = json::array();
  for (const auto& [lo, n] : st.histogram) h.push_back(json{{"from", lo}, {"count", n}});
  return json{{"examples", st.n}, {"min", st.min}, {"p5", st.p5}, {"p25", st.p25}, {"median", st.median},
              {"p75", st.p75}, {"p95", st.p95}, {"max", st.max}, {"mean", st.mean},
              {"bin_width", st.bin_width}, {"histogram", h}};
}

}  // namespace

// The data's shape, per split (the length distribution above all): data.json
// in the run folder and one console line per split.
void Run::describe_data(Console& con) const {
  json j;
  j["task"] = cfg_.task;
  j["seq_len"] = data_.train.seq_len;
  for (const Dataset* d : {&data_.train, &data_.val, &data_.test}) {
    const LengthStats st = length_stats(*d, 16);
    con.line("lengths " + d->name + ": " + st.str());
    const size_t slash = d->name.rfind('/');
    j[slash == std::string::npos ? d->name : d->name.substr(slash + 1)] = length_json(st);
  }
  folder_.write("data.json", j.dump(2) + "\n");
  // The text task: how new inputs are read the same way (tokeniser, vocabulary, class names), for
  // hkt-eval and hkt-predict.
  if (!data_.encoding.empty()) folder_.write("encoding.json", data_.encoding);
}

// summary.json: the run's settings and results.
void Run::write_summary(const TrainResult& r, const DataParallel& dp) const {
  if (!folder_.writes()) return;
  json s;
  s["config"] = config_json(cfg_);
  s["model_config"] = json::parse(st_.mcfg.to_json());
  s["params"] = r.params;
  s["steps"] = st_.step;
  s["best_step"] = st_.best_step;
  s["best_val_acc"] = st_.best_val;
  s["test_acc"] = r.test_acc;
  s["test_loss"] = r.test_loss;
  s["test_examples"] = data_.test.size();
  s["final_val_acc"] = st_.final_val;
  s["wall_s"] = r.wall_s;
  s["train_s"] = clock_.train_s();
  s["s_per_step"] = r.s_per_step;
  // The memory estimate the run was checked against and the process's measured peak
  // (docs/tasks.md, "Memory"; on a GPU the estimate counts the host's share only).
  s["memory_estimate_bytes"] = mem_estimate_.total();
  s["peak_rss_bytes"] = peak_rss();
  s["device"] = ropt_.device.str();  // the time per step belongs to the device (the last segment's)
  // The CPU threads of the last segment: OpenBLAS's count changes the last bits of large
  // products where OpenBLAS runs them (float64, or "sgemm": "blas"; docs/design.md,
  // "Determinism"), so repeating such a run's bits needs it.
  s["threads"] = get_num_threads();
  s["blas_threads"] = get_blas_num_threads();
  s["blas_core"] = get_blas_core();  // OpenBLAS's kernel set: another one gives other last bits
  s["sgemm"] = get_sgemm_backend();   // "hkt": float32 products in the library's own kernel
  // Data parallel: processes, and this segment's time waiting for the gradients' and metrics'
  // all-reduces after the backward (what overlap did not hide), and its share of the steps' time.
  s["ranks"] = world().size;
  s["comm_wait_s"] = dp.comm_s;
  s["comm_share"] = clock_.seg_train > 0 ? dp.comm_s / clock_.seg_train : 0.0;
  folder_.write("summary.json", s.dump(2) + "\n");
}

}  // namespace hkt::tasks::detail
