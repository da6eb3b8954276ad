// Loading a trained classifier and writing a report folder (see report.hpp).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hkt/analysis/report.hpp"
#include "hkt/tasks.hpp"

namespace hkt::analysis {
namespace {

namespace fs = std::filesystem;


void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  HKT_CHECK(f, "write_report: cannot write '", p.string(), "'");
  f << text;
  f.flush();
  HKT_CHECK(f, "write_report: cannot write '", p.string(), "'");
}

std::string cell(double v) {
  if (std::isnan(v)) return "nan";
  char buf[40];
  if (v == std::floor(v) && std::abs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

std::string Table::csv() const {
  std::ostringstream out;
  for (size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << "\n";
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << cell(row[i]);
    out << "\n";
  }
  return out.str();
}

void write_report(const std::string& dir, const Report& r) {
  HKT_CHECK(!dir.empty(), "write_report: the output folder is empty");
  fs::path out = fs::path(dir).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "dir/" -> "dir"
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  HKT_CHECK(!ec, "write_report: cannot create '", parent.string(), "': ", ec.message());
  HKT_CHECK(!fs::exists(out) || fs::is_directory(out), "write_report: '", out.string(),
            "' exists and is not a folder");
  const fs::path tmp = parent / (out.filename().string() + ".tmp"), old = parent / (out.filename().string() + ".old");
  fs::remove_all(tmp);
  fs::create_directories(tmp, ec);
  HKT_CHECK(!ec, "write_report: cannot create '", tmp.string(), "': ", ec.message());
  try {
    write_text(tmp / "report.json", r.json.dump(2) + "\n");
    for (const auto& [name, t] : r.tables) write_text(tmp / name, t.csv());
    if (!r.sample.empty()) save_safetensors((tmp / "sample.safetensors").string(), r.sample);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (fs::exists(out)) {
    fs::remove_all(old);
    fs::rename(out, old, ec);
    HKT_CHECK(!ec, "write_report: cannot rename '", out.string(), "': ", ec.message());
  }
  fs::rename(tmp, out, ec);
  HKT_CHECK(!ec, "write_report: cannot rename '", tmp.string(), "' to '", out.string(), "': ", ec.message());
  fs::remove_all(old, ec);
}

std::vector<std::pair<std::string, Tensor>> sample_tensors(const tasks::Dataset& data) {
  std::vector<int64_t> idx(static_cast<size_t>(data.size()));
  for (int64_t i = 0; i < data.size(); ++i) idx[i] = i;
  const tasks::Batch b = data.batch(idx);
  return {{"inputs", b.inputs}, {"valid", b.valid}};
}

LoadedModel load_trained(const std::string& path, const std::string& weights) {
  HKT_CHECK(weights == "best" || weights == "final", "load_trained: weights must be \"best\" or \"final\", got '",
            weights, "'");
  const fs::path p(path);
  LoadedModel lm;
  fs::path file;
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "config.json")) {  // a run folder
      try {
        lm.train = tasks::TrainConfig::from_json(hkt::tasks::read_text_file(p / "config.json"));
      } catch (const Error& e) {
        throw Error((p / "config.json").string() + ": " + e.what());
      }
      lm.run_dir = p.string();
      file = weights == "best" ? p / "best.safetensors" : p / "checkpoint" / "model.safetensors";
      HKT_CHECK(fs::exists(file), "load_trained: the run folder '", path, "' has no ", file.filename().string(),
                weights == "best" ? " (no evaluation yet?); try --weights final" : " (no checkpoint yet)",
                ": '", file.string(), "' not found");
    } else {
      file = p / "model.safetensors";
      HKT_CHECK(fs::exists(file), "load_trained: '", path,
                "' is neither a run folder (no config.json) nor a checkpoint folder (no model.safetensors)");
    }
  } else {
    HKT_CHECK(fs::exists(p, ec), "load_trained: '", path, "' not found");
    file = p;
    // A file inside a run folder (best.safetensors): the run's config.json names the task.
    const fs::path run = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (fs::exists(run / "config.json") && fs::exists(run / "metrics.jsonl")) {
      lm.train = tasks::TrainConfig::from_json(hkt::tasks::read_text_file(run / "config.json"));
      lm.run_dir = run.string();
    }
  }
  lm.weights = file.string();
  lm.metadata = load_safetensors(lm.weights).metadata;
  auto mc = lm.metadata.find("hkt.model_config");
  HKT_CHECK(mc != lm.metadata.end(), "load_trained: '", lm.weights,
            "' has no \"hkt.model_config\" in its metadata (not written by hkt-train?)");
  try {
    lm.config = nn::ClassifierConfig::from_json(mc->second);
  } catch (const Error& e) {
    throw Error(lm.weights + ": hkt.model_config: " + e.what());
  }
  auto tc = lm.metadata.find("hkt.config");
  if (!lm.train && tc != lm.metadata.end()) lm.train = tasks::TrainConfig::from_json(tc->second);
  lm.model = std::make_unique<nn::SequenceClassifier>(lm.config);
  nn::load_model(lm.weights, *lm.model);
  lm.model->eval();
  return lm;
}

}  // namespace hkt::analysis
