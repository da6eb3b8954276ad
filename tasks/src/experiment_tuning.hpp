// Experiment files (experiment.cpp): how a run's settings come from a tuning grid
// ("tuning": the best finished tuning run per (task, family), or the recorded choice) and
// from runs another file trains ("shared_with"), and the first difference of two configs.
// Internal to the tasks layer.
#pragma once
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/tasks/experiment.hpp"
#include "hkt/tasks/files.hpp"

namespace hkt::tasks::detail {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// "%.Nf" of x.
inline std::string fixed_point(double x, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, x);
  return buf;
}

// The value at a dotted path ("model_overrides.dropout") of a JSON object, or null.
inline const json* at_path(const json& j, const std::string& path) {
  const json* cur = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &cur->at(key);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

inline void set_path(json& j, const std::string& path, const json& v) {
  json* cur = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*cur)[key] = v;
      return;
    }
    if (!cur->contains(key) || !(*cur)[key].is_object()) (*cur)[key] = json::object();
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

// What "tuned_as" resolves to for one (task, family): the fields to merge, or why the run waits.
struct Tuned {
  json fields = json::object();
  std::string waiting;
};

class Tuning {
 public:
  Tuning(const json& spec, const std::string& base_dir) {
    HKT_CHECK(spec.is_object() && spec.contains("experiment") && spec.at("experiment").is_string(),
              "experiment: \"tuning\" must be an object with \"experiment\": the tuning experiment's file");
    for (auto it = spec.begin(); it != spec.end(); ++it)
      HKT_CHECK(it.key() == "experiment" || it.key() == "fields" || it.key() == "tasks" || it.key() == "recorded",
                "experiment: \"tuning\": unknown key \"", it.key(),
                "\" (expected experiment, fields, tasks, recorded)");
    fs::path file = spec.at("experiment").get<std::string>();
    if (file.is_relative() && !base_dir.empty()) file = fs::path(base_dir) / file;
    file_ = file.string();
    fields_ = {"lr", "model_overrides.dropout"};
    if (spec.contains("fields")) {
      const json& f = spec.at("fields");
      HKT_CHECK(f.is_array() && !f.empty(), "experiment: \"tuning\": \"fields\" must be a non-empty array of names");
      fields_.clear();
      for (const json& k : f) {
        HKT_CHECK(k.is_string() && !k.get<std::string>().empty(), "experiment: \"tuning\": \"fields\" must hold "
                  "field names such as \"lr\" or \"model_overrides.dropout\", got ", excerpt(k.dump()));
        fields_.push_back(k.get<std::string>());
      }
    }
    if (spec.contains("tasks")) {
      HKT_CHECK(spec.at("tasks").is_object(), "experiment: \"tuning\": \"tasks\" must map task keys to task keys");
      for (auto it = spec.at("tasks").begin(); it != spec.at("tasks").end(); ++it) {
        HKT_CHECK(it.value().is_string(), "experiment: \"tuning\": \"tasks\": \"", it.key(), "\" must name a task");
        task_map_[it.key()] = it.value().get<std::string>();
      }
    }
    const std::string text = read_text_file(file_);
    HKT_CHECK(text.find("\"tuning\"") == std::string::npos || !json::parse(text, nullptr, false).contains("tuning"),
              "experiment: the tuning experiment ", file_, " has a \"tuning\" of its own (one level only)");
    exp_ = Experiment::from_file(file_);
    if (spec.contains("recorded")) read_recorded(spec.at("recorded"));
  }

  // The fields chosen for `task` (this file's key) and `family`; `choice` describes the pick.
  Tuned resolve(const std::string& task, const std::string& family, std::string* choice) const {
    const auto tm = task_map_.find(task);
    const std::string ttask = tm == task_map_.end() ? task : tm->second;
    Tuned r;
    int64_t n = 0, done = 0;
    const ExperimentRun* best = nullptr;
    double best_val = -1;
    for (const ExperimentRun& run : exp_.runs) {
      if (run.task != ttask || run.family != family) continue;
      ++n;
      const RunSummary s = read_summary(run.cfg.run_dir);
      if (!s.done) continue;
      ++done;
      if (s.best_val_acc > best_val) best_val = s.best_val_acc, best = &run;
    }
    HKT_CHECK(n > 0, "experiment: \"tuned_as\": \"", family, "\": the tuning experiment ", file_,
              " has no run of family \"", family, "\" on task \"", ttask, "\"");
    const auto rec = recorded_.find({ttask, family});
    if (done < n) {
      if (rec != recorded_.end()) {  // the tuning ran elsewhere: its recorded choice stands in
        std::string what;
        for (const std::string& f : fields_) {
          const json* v = at_path(rec->second, f);
          set_path(r.fields, f, *v);
          what += (what.empty() ? "" : ", ") + f + " " + v->dump();
        }
        if (choice)
          *choice = str_cat(task, " / ", family, ": ", what, " as recorded in \"tuning\": \"recorded\" (",
                            recorded_note(rec->second), "; ", done, " of ", n, " tuning runs of ", file_,
                            " finished here)");
        return r;
      }
      r.waiting = str_cat("waiting for its tuning: ", done, " of ", n, " runs of \"", family, "\" on ", ttask,
                          " finished (", file_, ")");
      return r;
    }
    const json cfg = json::parse(best->cfg.to_json());
    std::string what;
    for (const std::string& f : fields_) {
      const json* v = at_path(cfg, f);
      HKT_CHECK(v, "experiment: tuning: the chosen run ", best->cfg.run_dir, " has no field \"", f, "\"");
      // model_overrides holds only what its run set: a field it lacks was not tuned there.
      HKT_CHECK(f.rfind("model_overrides.", 0) != 0 || !v->is_null(), "experiment: tuning: ", best->cfg.run_dir,
                " does not set \"", f, "\"");
      // A record that the finished runs contradict would mix two settings in one grid.
      HKT_CHECK(rec == recorded_.end() || *at_path(rec->second, f) == *v, "experiment: \"tuning\": \"recorded\": \"",
                ttask, "\": \"", family, "\": \"", f, "\" is ", rec == recorded_.end() ? "" : at_path(rec->second, f)->dump(),
                " but the finished tuning runs of ", file_, " chose ", v->dump(), " (", best->model,
                "): update the record or remove it");
      set_path(r.fields, f, *v);
      what += (what.empty() ? "" : ", ") + f + " " + v->dump();
    }
    if (choice)
      *choice = str_cat(task, " / ", family, ": ", what, " from ", best->model, " (best validation accuracy ",
                        fixed_point(100 * best_val, 2), "% of ", n, " tuning runs of ", file_, ")");
    return r;
  }

 private:
  // "recorded": {"tuning task": {"family": {"lr": 5e-4, "model_overrides.dropout": 0.1,
  //              "run": "hkt-lr5e-4-d0.1", "best_val_acc": 0.3735}}}: the choice of a tuning that ran
  // elsewhere (another machine, an earlier checkout). Every tuned field is required; "run" and
  // "best_val_acc" say where it came from.
  void read_recorded(const json& rec) {
    const std::string where = "experiment: \"tuning\": \"recorded\"";
    HKT_CHECK(rec.is_object(), where, " must map tuning task keys to {family: {field: value}}");
    for (auto t = rec.begin(); t != rec.end(); ++t) {
      const std::string tw = str_cat(where, ": \"", t.key(), "\"");
      const bool known_task = std::any_of(exp_.runs.begin(), exp_.runs.end(),
                                          [&](const ExperimentRun& r) { return r.task == t.key(); });
      HKT_CHECK(known_task, tw, ": the tuning experiment ", file_, " has no task \"", t.key(), "\"");
      HKT_CHECK(t.value().is_object(), tw, " must map families to {field: value}");
      for (auto f = t.value().begin(); f != t.value().end(); ++f) {
        const std::string fw = str_cat(tw, ": \"", f.key(), "\"");
        const bool known = std::any_of(exp_.runs.begin(), exp_.runs.end(), [&](const ExperimentRun& r) {
          return r.task == t.key() && r.family == f.key();
        });
        HKT_CHECK(known, fw, ": the tuning experiment ", file_, " has no run of family \"", f.key(),
                  "\" on task \"", t.key(), "\"");
        const json& v = f.value();
        HKT_CHECK(v.is_object(), fw, " must be an object of the tuned fields");
        json fields = json::object();
        for (auto k = v.begin(); k != v.end(); ++k) {
          const bool field = std::find(fields_.begin(), fields_.end(), k.key()) != fields_.end();
          HKT_CHECK(field || k.key() == "run" || k.key() == "best_val_acc", fw, ": unknown key \"", k.key(),
                    "\" (the tuned fields, \"run\" or \"best_val_acc\")");
          if (field) {
            HKT_CHECK(k.value().is_primitive() && !k.value().is_null(), fw, ": \"", k.key(),
                      "\" must be a number, string or boolean, got ", excerpt(k.value().dump()));
            set_path(fields, k.key(), k.value());
          }
        }
        HKT_CHECK(!v.contains("run") || v.at("run").is_string(), fw, ": \"run\" must be a model key");
        HKT_CHECK(!v.contains("best_val_acc") ||
                      (v.at("best_val_acc").is_number() && v.at("best_val_acc").get<double>() >= 0 &&
                       v.at("best_val_acc").get<double>() <= 1),
                  fw, ": \"best_val_acc\" must be a fraction in [0, 1]");
        for (const std::string& k : fields_)  // (at_path: "fields" that overlap, "a" and "a.b", cannot both be set)
          HKT_CHECK(v.contains(k) && at_path(fields, k), fw, ": the tuned field \"", k, "\" is missing");
        if (v.contains("run")) fields["run"] = v.at("run");
        if (v.contains("best_val_acc")) fields["best_val_acc"] = v.at("best_val_acc");
        recorded_[{t.key(), f.key()}] = fields;
      }
    }
  }

  static std::string recorded_note(const json& rec) {
    std::string s = rec.contains("run") ? str_cat("from ", rec.at("run").get<std::string>()) : "run not named";
    if (rec.contains("best_val_acc"))
      s += str_cat(", best validation accuracy ", fixed_point(100 * rec.at("best_val_acc").get<double>(), 2), "%");
    return s;
  }

  std::string file_;
  std::vector<std::string> fields_;
  std::map<std::string, std::string> task_map_;
  std::map<std::pair<std::string, std::string>, json> recorded_;
  Experiment exp_;
};

// The experiments named by "shared_with", read once per file.
class SharedRuns {
 public:
  explicit SharedRuns(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  // The other file's run task/model/seed<seed>; `where` names the run asking.
  const ExperimentRun& find(const std::string& spec, const std::string& task, const std::string& model,
                            uint64_t seed, const std::string& where, std::string* file_out) {
    fs::path file = spec;
    if (file.is_relative() && !base_dir_.empty()) file = fs::path(base_dir_) / file;
    const std::string key = file.string();
    auto it = files_.find(key);
    if (it == files_.end()) {
      const std::string text = read_text_file(key);
      const json other = json::parse(text, nullptr, false);
      bool nested = false;
      if (other.is_object() && other.contains("models") && other.at("models").is_object())
        for (const auto& m : other.at("models").items())
          nested = nested || (m.value().is_object() && m.value().contains("shared_with"));
      HKT_CHECK(!nested, where, ": \"shared_with\": ", key, " shares runs of its own (one level only)");
      it = files_.emplace(key, Experiment::from_file(key)).first;
    }
    *file_out = key;
    for (const ExperimentRun& r : it->second.runs)
      if (r.task == task && r.model == model && r.seed == seed) return r;
    throw Error(str_cat(where, ": \"shared_with\": ", key, " has no run ", task, "/", model, "/seed", seed));
  }

 private:
  std::string base_dir_;
  std::map<std::string, Experiment> files_;
};

// The first field (dotted path) where two configs differ, "" when they are equal.
inline std::string first_difference(const json& a, const json& b, const std::string& path = "") {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string p = path.empty() ? it.key() : path + "." + it.key();
      if (!b.contains(it.key())) return p;
      if (std::string d = first_difference(it.value(), b.at(it.key()), p); !d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return path.empty() ? it.key() : path + "." + it.key();
    return "";
  }
  return a == b ? "" : (path.empty() ? "(the whole config)" : path);
}

}  // namespace hkt::tasks::detail
