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

// The shapes the config gives the classifier's main tensors (hkt/models/classifier.hpp:
// pos, the input map, every block's FFN, the head, the number of blocks) against
// the tensors the file stores: hkt::Error naming the first that differs.
static void check_stored_shapes(const nn::ClassifierConfig& c, const SafetensorsFile& f) {
  const auto expect = [&](const std::string& name, const Shape& want, const char* fields) {
    const Tensor* t = f.find(name);
    HKT_CHECK(t != nullptr, "the file stores no tensor '", name, "'");
    HKT_CHECK(t->shape() == want, fields, " give '", name, "' the shape ", shape_str(want), ", but the file stores ",
              shape_str(t->shape()));
  };
  expect("pos", {c.max_len, c.dim}, str_cat("max_len ", c.max_len, " and dim ", c.dim).c_str());
  if (c.vocab > 0) expect("embed.weight", {c.vocab, c.dim}, str_cat("vocab ", c.vocab, " and dim ", c.dim).c_str());
  else expect("input_map.weight", {c.dim, c.input_features},
              str_cat("input_features ", c.input_features, " and dim ", c.dim).c_str());
  expect("head.weight", {c.classes, c.dim}, str_cat("classes ", c.classes, " and dim ", c.dim).c_str());
  int64_t blocks = 0;
  for (const auto& [name, t] : f.tensors) {
    if (name.rfind("blocks.", 0) != 0) continue;
    const size_t dot = name.find('.', 7);
    try {
      blocks = std::max<int64_t>(blocks, std::stoll(name.substr(7, dot - 7)) + 1);
    } catch (const std::exception&) {
    }
  }
  HKT_CHECK(blocks == c.layers, "layers ", c.layers, " but the file stores ", blocks, " blocks");
  if (c.layers > 0)
    expect("blocks.0.ffn.fc1.weight", {c.ffn_mult * c.dim, c.dim},
           str_cat("ffn_mult ", c.ffn_mult, " and dim ", c.dim).c_str());
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
  const SafetensorsFile stored = load_safetensors(lm.weights);
  lm.metadata = stored.metadata;
  auto mc = lm.metadata.find("hkt.model_config");
  HKT_CHECK(mc != lm.metadata.end(), "load_trained: '", lm.weights,
            "' has no \"hkt.model_config\" in its metadata (not written by hkt-train?)");
  // Untrusted metadata: its limits, then its shapes against the tensors the file
  // stores, before the model is built (a 23 KB file could otherwise ask for 13 GB).
  try {
    lm.config = nn::ClassifierConfig::from_json(mc->second);
    lm.config.validate();
    check_stored_shapes(lm.config, stored);
  } catch (const Error& e) {
    throw Error("'" + lm.weights + "': metadata \"hkt.model_config\": " + e.what());
  }
  auto tc = lm.metadata.find("hkt.config");
  if (!lm.train && tc != lm.metadata.end()) lm.train = tasks::TrainConfig::from_json(tc->second);
  lm.model = std::make_unique<nn::SequenceClassifier>(lm.config);
  nn::load_model(lm.weights, *lm.model);
  lm.model->eval();
  return lm;
}

}  // namespace hkt::analysis
