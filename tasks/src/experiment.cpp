#include "hkt/tasks/experiment.hpp"

#include "experiment_graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/stats.hpp"
#include "hkt/tasks/train.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// dst <- src, merging nested objects key by key.
void merge(json& dst, const json& src) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    if (it.value().is_object() && dst.contains(it.key()) && dst[it.key()].is_object())
      merge(dst[it.key()], it.value());
    else
      dst[it.key()] = it.value();
  }
}

const json& object_at(const json& j, const char* key, const std::string& where) {
  HKT_CHECK(j.contains(key), where, ": missing \"", key, "\"");
  HKT_CHECK(j.at(key).is_object() && !j.at(key).empty(), where, ": \"", key, "\" must be a non-empty object");
  return j.at(key);
}

std::string fmt(double x, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, x);
  return buf;
}

std::string pct_ms(const MeanStd& m) {
  if (m.n == 0) return "-";
  return fmt(100 * m.mean, 2) + " +- " + fmt(100 * m.std, 2);
}

// Per (task, model): the finished runs' numbers.
struct Cell {
  std::vector<double> val, sps, wall, flops;
  std::map<uint64_t, double> test_by_seed;         // test accuracy by seed, for the per-seed margins
  std::map<uint64_t, std::string> run_by_seed;      // the finished runs' folders
  std::set<std::string> devices;                    // where the finished runs trained (their times are theirs)
  int64_t steps = 0, params = 0, seeds = 0, test_examples = 0;

  std::vector<double> test() const {
    std::vector<double> out;
    for (const auto& [seed, acc] : test_by_seed) out.push_back(acc);
    return out;
  }
};

std::map<std::pair<std::string, std::string>, Cell> cells(const Experiment& e) {
  std::map<std::pair<std::string, std::string>, Cell> out;
  for (const ExperimentRun& r : e.runs) {
    Cell& c = out[{r.task, r.model}];
    ++c.seeds;
    const RunSummary s = read_summary(r.cfg.run_dir);
    if (!s.done) continue;
    c.val.push_back(s.best_val_acc);
    c.test_by_seed[r.seed] = s.test_acc;
    c.run_by_seed[r.seed] = r.cfg.run_dir;
    if (s.test_examples > 0) c.test_examples = s.test_examples;
    c.sps.push_back(s.s_per_step);
    c.devices.insert(s.device);
    c.wall.push_back(s.wall_s);
    if (s.flops_per_batch > 0) c.flops.push_back(s.flops_per_batch);
    c.steps = s.steps;
    c.params = s.params;
  }
  return out;
}

// The ratio of the means of a and b; -1 when either has no value (printed "-").
double ratio(const std::vector<double>& a, const std::vector<double>& b) {
  const MeanStd ma = mean_std(a), mb = mean_std(b);
  return ma.n > 0 && mb.n > 0 && mb.mean > 0 ? ma.mean / mb.mean : -1;
}

// The ratio of two cells' times per step: -1 (printed "-") unless every run of both trained on one
// and the same device, since a step's time on a GPU says nothing about one on the CPU.
double time_ratio(const Cell& c, const Cell& base) {
  return c.devices.size() == 1 && c.devices == base.devices ? ratio(c.sps, base.sps) : -1;
}

// A cell's mean time per step in ms, with its device unless that is the CPU; "mixed" when its runs
// trained on different devices (their mean would mean nothing).
std::string ms_per_step(const Cell& c) {
  const MeanStd sps = mean_std(c.sps);
  if (sps.n == 0) return "-";
  if (c.devices.size() > 1) return "mixed devices";
  const std::string& d = *c.devices.begin();
  return fmt(1e3 * sps.mean, 1) + (d == "cpu" ? "" : " (" + d + ")");
}

std::string signed_pts(double x) { return str_cat(x >= 0 ? "+" : "", fmt(100 * x, 2)); }

// A run's test_predictions.csv as (index, correct) per line, in file order;
// empty when the file is missing or malformed (the bootstrap is then left out).
std::vector<std::pair<int64_t, uint8_t>> read_predictions(const std::string& run_dir) {
  std::vector<std::pair<int64_t, uint8_t>> out;
  std::ifstream f(fs::path(run_dir) / kTestPredictionsFile);
  std::string line;
  if (!f.good() || !std::getline(f, line) || line != "index,label,predicted") return {};
  while (std::getline(f, line)) {
    long long idx = 0, label = 0, pred = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lld", &idx, &label, &pred) != 3) return {};
    out.emplace_back(idx, static_cast<uint8_t>(label == pred));
  }
  return out;
}

// The correctness vectors of two runs on the same test examples (same indices
// in the same order), or nullopt.
std::optional<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>> paired_correct(const std::string& a,
                                                                                   const std::string& b) {
  const auto pa = read_predictions(a), pb = read_predictions(b);
  if (pa.empty() || pa.size() != pb.size()) return std::nullopt;
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> r;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].first != pb[i].first) return std::nullopt;
    r.first.push_back(pa[i].second);
    r.second.push_back(pb[i].second);
  }
  return r;
}

std::string pts_interval(const Interval& i) {
  if (!i.defined) return "-";
  return "[" + signed_pts(i.lo) + ", " + signed_pts(i.hi) + "]";
}

// Paired by seed: for each of the experiment's comparisons, the model's test
// accuracy minus the reference's on the same task and seed, with intervals
// (experiment.hpp, results_markdown).
void margins_markdown(std::ostream& o, const Experiment& e,
                      const std::map<std::pair<std::string, std::string>, Cell>& cs) {
  std::ostringstream rows;
  for (const std::string& t : e.tasks) {
    for (const auto& [m, ref] : e.comparisons) {
      const auto ci = cs.find({t, m}), bi = cs.find({t, ref});
      if (ci == cs.end() || bi == cs.end()) continue;  // a model that does not run on this task
      const Cell& c = ci->second;
      const Cell& base = bi->second;
      // Runs of different lengths are not a fair comparison (an ablation at half the budget
      // against the full baseline, say): such a pair is left out.
      if (!c.test_by_seed.empty() && !base.test_by_seed.empty() && c.steps != base.steps) continue;
      std::vector<double> d;
      std::string per_seed;
      std::vector<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>> pairs;
      bool all_paired = true;
      for (const auto& [seed, acc] : c.test_by_seed) {
        const auto it = base.test_by_seed.find(seed);
        if (it == base.test_by_seed.end()) continue;
        d.push_back(acc - it->second);
        if (!per_seed.empty()) per_seed += ", ";
        per_seed += str_cat("s", seed, " ", signed_pts(d.back()));
        const auto pc = paired_correct(c.run_by_seed.at(seed), base.run_by_seed.at(seed));
        if (pc) {
          per_seed += ' ';  // not " " + ...: GCC 12 warns (-Wrestrict) on that temporary at -O3
          per_seed += pts_interval(paired_bootstrap({*pc}));
          pairs.push_back(*pc);
        } else {
          all_paired = false;
        }
      }
      if (d.empty()) continue;
      const MeanStd md = mean_std(d);
      const Interval ti = t_interval(d);
      const Interval bi_all = all_paired && !pairs.empty() ? paired_bootstrap(pairs) : Interval{};
      const auto side = [](const Interval& i) {
        return i.lo > 0 ? std::string("higher") : i.hi < 0 ? std::string("lower") : std::string("not distinguishable");
      };
      std::string verdict;
      if (ti.defined) verdict = side(ti) + " (t interval over " + std::to_string(d.size()) + " seeds)";
      else if (bi_all.defined) verdict = side(bi_all) + " on this test set (one seed: training randomness not covered)";
      else verdict = "- (one seed, no per-example predictions)";
      rows << "| " << t << " | " << m << " | " << ref << " | " << d.size() << " | " << per_seed << " | "
           << signed_pts(md.mean) << " +- " << fmt(100 * md.std, 2) << " | " << pts_interval(ti) << " | "
           << pts_interval(bi_all) << " | " << verdict << " |\n";
    }
  }
  if (rows.str().empty()) return;
  o << "\nComparisons (test accuracy, points): model minus reference, paired by seed. Per seed: the difference "
       "and its 95% paired bootstrap interval over the test examples (10,000 resamples). Mean +- std over seeds, "
       "the 95% t interval of the mean over seeds, and the bootstrap interval of the mean with the test set as "
       "the only source of variation. The verdict follows the t interval:\n\n"
    << "| task | model | reference | seeds paired | per seed [95% bootstrap] | mean +- std | 95% t interval | "
       "95% bootstrap (mean) | verdict |\n"
    << "|------|-------|-----------|------:|------|------:|------|------|------|\n"
    << rows.str();
}

double sum(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s;
}

}  // namespace

namespace {

// The value at a dotted path ("model_overrides.dropout") of a JSON object, or null.
const json* at_path(const json& j, const std::string& path) {
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

void set_path(json& j, const std::string& path, const json& v) {
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
                        fmt(100 * best_val, 2), "% of ", n, " tuning runs of ", file_, ")");
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
      s += str_cat(", best validation accuracy ", fmt(100 * rec.at("best_val_acc").get<double>(), 2), "%");
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
std::string first_difference(const json& a, const json& b, const std::string& path = "") {
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

// Every run has a folder of its own: two task or model keys that name the same
// folder once normalised ("hkt" and "hkt/") would mix their runs' results; a key
// that climbs out of out_dir ("..", an absolute path) is refused too.
void check_run_folders(const Experiment& e) {
  const auto check_key = [](const std::string& kind, const std::string& k) {
    const fs::path p(k);
    bool bad = k.empty() || p.is_absolute();
    for (const fs::path& c : p) bad = bad || c == ".." || c == ".";
    HKT_CHECK(!bad, "experiment: the ", kind, " key \"", k, "\" cannot name a run folder (empty, absolute, or with "
              "\".\" or \"..\" in it)");
  };
  std::map<std::string, const ExperimentRun*> seen;
  for (const ExperimentRun& r : e.runs) {
    check_key("task", r.task);
    check_key("model", r.model);
    std::string key = fs::path(r.cfg.run_dir).lexically_normal().string();
    while (key.size() > 1 && key.back() == '/') key.pop_back();
    const auto [it, fresh] = seen.emplace(key, &r);
    if (fresh) continue;
    const ExperimentRun& o = *it->second;
    throw Error(str_cat("experiment: runs ", o.task, "/", o.model, "/seed", o.seed, " and ", r.task, "/", r.model,
                        "/seed", r.seed, " (", o.model == r.model ? "task keys \"" + o.task + "\" and \"" + r.task
                                                                  : "model keys \"" + o.model + "\" and \"" + r.model,
                        "\") would share the run folder ", key, "; give them keys that differ as folder names"));
  }
}

}  // namespace

Experiment Experiment::from_json(const std::string& text, const std::string& out_dir_override,
                                 const std::string& base_dir) {
  json j;
  check_json_text(text, "experiment");
  try {
    j = json::parse(text);
  } catch (const json::exception& ex) {
    throw Error(str_cat("experiment: not valid JSON: ", excerpt(ex.what(), 240)));
  }
  HKT_CHECK(j.is_object(), "experiment: the file must hold a JSON object");
  // Files that refer to each other are checked as one graph first (no endless recursion).
  const detail::ExperimentDepth depth;
  if (depth.outermost()) detail::check_reference_graph(j, "", base_dir);
  static const char* known[] = {"name", "description", "notes", "out_dir", "baseline", "compare", "base", "tasks",
                                "models", "seeds", "order", "tuning", "launcher"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    HKT_CHECK(ok, "experiment: unknown key \"", it.key(), "\"");
  }
  Experiment e;
  try {
    e.name = j.value("name", std::string("experiment"));
    e.description = j.value("description", std::string());
    e.baseline = j.value("baseline", std::string());
    if (j.contains("notes")) e.notes = j.at("notes").get<std::vector<std::string>>();
    e.out_dir = out_dir_override.empty() ? j.value("out_dir", "runs/" + e.name) : out_dir_override;
    e.order = j.value("order", std::string("seed"));
    if (j.contains("launcher")) {
      const json& l = j.at("launcher");
      HKT_CHECK(l.is_array() && !l.empty(), "experiment: \"launcher\" must be a non-empty array of strings (a command, "
                "e.g. [\"mpirun\", \"-np\", \"2\"]), got ", excerpt(l.dump()));
      for (const json& a : l)
        HKT_CHECK(a.is_string() && !a.get<std::string>().empty(), "experiment: \"launcher\" must hold non-empty "
                  "strings, got ", excerpt(a.dump()));
      e.launcher = l.get<std::vector<std::string>>();
    }
    HKT_CHECK(e.order == "seed" || e.order == "task", "experiment: \"order\" must be \"seed\" or \"task\", got \"",
              e.order, "\"");
    HKT_CHECK(j.contains("seeds") && j.at("seeds").is_array() && !j.at("seeds").empty(),
              "experiment: \"seeds\" must be a non-empty array of integers");
    for (const json& s : j.at("seeds"))
      HKT_CHECK(s.is_number_unsigned(), "experiment: \"seeds\" must hold integers >= 0, got ", excerpt(s.dump()));
    e.seeds = j.at("seeds").get<std::vector<uint64_t>>();
  } catch (const json::exception& ex) {
    throw Error(str_cat("experiment: a top-level field has the wrong type: ", excerpt(ex.what(), 240)));
  }
  const json base = j.contains("base") ? j.at("base") : json::object();
  HKT_CHECK(base.is_object(), "experiment: \"base\" must be an object");
  const json& tasks = object_at(j, "tasks", "experiment");
  const json& models = object_at(j, "models", "experiment");
  for (auto t = tasks.begin(); t != tasks.end(); ++t) e.tasks.push_back(t.key());
  for (auto m = models.begin(); m != models.end(); ++m) e.models.push_back(m.key());
  HKT_CHECK(e.baseline.empty() || models.contains(e.baseline), "experiment: baseline \"", e.baseline,
            "\" is not one of the models");
  if (!e.baseline.empty())
    for (const std::string& m : e.models)
      if (m != e.baseline) e.comparisons.emplace_back(m, e.baseline);
  if (j.contains("compare")) {
    const json& cmp = j.at("compare");
    HKT_CHECK(cmp.is_array(), "experiment: \"compare\" must be an array of [model, reference] pairs");
    for (size_t i = 0; i < cmp.size(); ++i) {
      const json& p = cmp[i];
      HKT_CHECK(p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string(), "experiment: compare[", i,
                "] must be a pair of model names, [model, reference]");
      const std::string m = p[0].get<std::string>(), ref = p[1].get<std::string>();
      for (const std::string& name : {m, ref})
        HKT_CHECK(models.contains(name), "experiment: compare[", i, "] names \"", name,
                  "\", which is not one of the models");
      HKT_CHECK(m != ref, "experiment: compare[", i, "] compares \"", m, "\" with itself");
      const std::pair<std::string, std::string> pair{m, ref};
      HKT_CHECK(std::find(e.comparisons.begin(), e.comparisons.end(), pair) == e.comparisons.end(),
                "experiment: compare[", i, "]: \"", m, "\" against \"", ref, "\" is already compared",
                ref == e.baseline ? " (every model is compared with the baseline)" : "");
      e.comparisons.push_back(pair);
    }
  }
  // The grid is bounded before it is built (a file of 64 MiB could ask for billions of runs).
  constexpr double kMaxRuns = 100000;
  HKT_CHECK(static_cast<double>(e.tasks.size()) * static_cast<double>(e.models.size()) *
                    static_cast<double>(e.seeds.size()) <= kMaxRuns,
            "experiment: ", e.tasks.size(), " tasks x ", e.models.size(), " models x ", e.seeds.size(),
            " seeds is more than the limit of ", kMaxRuns, " runs");
  // A task's "per_model": {"<model key>": {fields}} applies after the model's fields.
  for (auto t = tasks.begin(); t != tasks.end(); ++t) {
    if (!t.value().is_object() || !t.value().contains("per_model")) continue;
    const json& pm = t.value().at("per_model");
    HKT_CHECK(pm.is_object(), "experiment: task \"", t.key(), "\": \"per_model\" must be an object");
    for (auto m = pm.begin(); m != pm.end(); ++m) {
      HKT_CHECK(models.contains(m.key()), "experiment: task \"", t.key(), "\": per_model names \"", m.key(),
                "\", which is not one of the models");
      HKT_CHECK(m.value().is_object(), "experiment: task \"", t.key(), "\": per_model \"", m.key(),
                "\" must be an object");
    }
  }
  // A model's own "tasks" and "seeds" (not TrainConfig fields).
  std::map<std::string, std::vector<std::string>> model_tasks;
  std::map<std::string, std::vector<uint64_t>> model_seeds;
  std::map<std::string, std::string> model_family, model_tuned_as, model_shared;
  std::optional<Tuning> tuning;
  SharedRuns shared(base_dir);
  if (j.contains("tuning")) tuning.emplace(j.at("tuning"), base_dir);
  for (auto m = models.begin(); m != models.end(); ++m) {
    const std::string where = "experiment: model \"" + m.key() + "\"";
    if (!m.value().is_object()) continue;  // reported below, with the run
    model_family[m.key()] = m.key();
    if (m.value().contains("family")) {
      HKT_CHECK(m.value().at("family").is_string(), where, ": \"family\" must be a string");
      model_family[m.key()] = m.value().at("family").get<std::string>();
    }
    if (m.value().contains("tuned_as")) {
      HKT_CHECK(m.value().at("tuned_as").is_string(), where, ": \"tuned_as\" must name a family of the tuning runs");
      HKT_CHECK(tuning.has_value(), where, ": \"tuned_as\" needs a top-level \"tuning\"");
      model_tuned_as[m.key()] = m.value().at("tuned_as").get<std::string>();
    }
    if (m.value().contains("shared_with")) {
      const json& sw = m.value().at("shared_with");
      HKT_CHECK(sw.is_string() && !sw.get<std::string>().empty(), where,
                ": \"shared_with\" must name the experiment file that trains this model's runs");
      model_shared[m.key()] = sw.get<std::string>();
    }
    if (m.value().contains("tasks")) {
      const json& ts = m.value().at("tasks");
      HKT_CHECK(ts.is_array() && !ts.empty(), where, ": \"tasks\" must be a non-empty array of task keys");
      for (const json& k : ts) {
        HKT_CHECK(k.is_string() && tasks.contains(k.get<std::string>()), where, ": \"tasks\" names ", k.dump(),
                  ", which is not one of the tasks");
        model_tasks[m.key()].push_back(k.get<std::string>());
      }
    }
    if (m.value().contains("seeds")) {
      const json& ss = m.value().at("seeds");
      HKT_CHECK(ss.is_array() && !ss.empty(), where, ": \"seeds\" must be a non-empty array of integers >= 0");
      for (const json& k : ss) {
        HKT_CHECK(k.is_number_unsigned(), where, ": \"seeds\" must hold integers >= 0, got ", k.dump());
        model_seeds[m.key()].push_back(k.get<uint64_t>());
      }
    }
  }
  for (auto t = tasks.begin(); t != tasks.end(); ++t)
    for (auto m = models.begin(); m != models.end(); ++m) {
      if (model_tasks.count(m.key()) &&
          std::find(model_tasks[m.key()].begin(), model_tasks[m.key()].end(), t.key()) == model_tasks[m.key()].end())
        continue;
      for (uint64_t seed : model_seeds.count(m.key()) ? model_seeds[m.key()] : e.seeds) {
        const std::string where = "experiment run " + t.key() + "/" + m.key() + "/seed" + std::to_string(seed);
        HKT_CHECK(t.value().is_object() && m.value().is_object(), where, ": task and model entries must be objects");
        json c = base;
        json task_fields = t.value();
        task_fields.erase("per_model");
        merge(c, task_fields);
        if (!t.value().contains("task")) c["task"] = t.key();
        json model_fields = m.value();
        for (const char* k : {"tasks", "seeds", "family", "tuned_as", "shared_with"}) model_fields.erase(k);
        merge(c, model_fields);
        std::string waiting;
        if (const auto ta = model_tuned_as.find(m.key()); ta != model_tuned_as.end()) {
          std::string choice;
          const Tuned tu = tuning->resolve(t.key(), ta->second, &choice);
          waiting = tu.waiting;
          merge(c, tu.fields);
          if (!choice.empty() && std::find(e.tuning_choices.begin(), e.tuning_choices.end(), choice) ==
                                     e.tuning_choices.end())
            e.tuning_choices.push_back(choice);
        }
        if (t.value().contains("per_model") && t.value().at("per_model").contains(m.key()))
          merge(c, t.value().at("per_model").at(m.key()));
        c["seed"] = seed;
        c["run_dir"] = (fs::path(e.out_dir) / t.key() / m.key() / ("seed" + std::to_string(seed))).string();
        ExperimentRun r;
        r.task = t.key();
        r.model = m.key();
        r.family = model_family[m.key()];
        r.seed = seed;
        r.waiting = waiting;
        try {
          r.cfg = TrainConfig::from_json(c.dump());
        } catch (const Error& ex) {
          throw Error(str_cat(where, ": ", ex.what()));
        }
        if (const auto sh = model_shared.find(m.key()); sh != model_shared.end()) {
          std::string other_file;
          const ExperimentRun& o = shared.find(sh->second, t.key(), m.key(), seed, where, &other_file);
          if (r.waiting.empty() && o.waiting.empty()) {
            json mine = json::parse(r.cfg.to_json()), theirs = json::parse(o.cfg.to_json());
            mine.erase("run_dir");
            theirs.erase("run_dir");
            const std::string d = first_difference(mine, theirs);
            HKT_CHECK(d.empty(), where, ": \"shared_with\": its config differs from ", other_file, "'s run ",
                      o.cfg.run_dir, " in \"", d, "\"");
          }
          r.cfg.run_dir = o.cfg.run_dir;
          r.shared_with = other_file;
          if (r.waiting.empty() && !o.waiting.empty()) r.waiting = str_cat("trained by ", other_file, ", which ", o.waiting);
          if (r.waiting.empty() && run_state(o.cfg.run_dir) != RunState::Done)
            r.waiting = str_cat("trained by ", other_file, " in ", o.cfg.run_dir, ": not finished there");
        }
        e.runs.push_back(std::move(r));
      }
    }
  check_run_folders(e);
  // Every seed a run uses, in first-seen order (the file's seeds first), for the training order.
  for (const ExperimentRun& r : e.runs)
    if (std::find(e.seeds.begin(), e.seeds.end(), r.seed) == e.seeds.end()) e.seeds.push_back(r.seed);
  return e;
}

Experiment Experiment::from_file(const std::string& path, const std::string& out_dir_override) {
  const std::string text = read_text_file(path);  // names the file when it cannot be read
  try {
    const detail::ExperimentDepth depth;
    if (depth.outermost()) {
      json j;
      try {
        check_json_text(text, path);
        j = json::parse(text);
      } catch (const std::exception&) {
        j = json();  // from_json reports it
      }
      detail::check_reference_graph(j, path, fs::path(path).parent_path().string());
    }
    return from_json(text, out_dir_override, fs::path(path).parent_path().string());
  } catch (const Error& ex) {
    throw Error(str_cat(path, ": ", ex.what()));
  }
}

RunState run_state(const std::string& run_dir) {
  std::error_code ec;
  if (fs::exists(fs::path(run_dir) / "summary.json", ec)) return RunState::Done;
  if (fs::exists(fs::path(run_dir) / "config.json", ec)) return RunState::Started;
  return RunState::New;
}

int64_t last_logged_step(const std::string& run_dir) {
  std::string text;
  try {
    text = read_text_file(fs::path(run_dir) / "metrics.jsonl");
  } catch (const Error&) {
    return -1;  // none yet (or not a readable file)
  }
  std::istringstream f(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) lines.push_back(std::move(line));
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    try {
      check_json_text(*it, "metrics.jsonl");
    } catch (const Error&) {
      continue;
    }
    const json j = json::parse(*it, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer()) return j["step"].get<int64_t>();
  }
  return -1;
}

RunSummary read_summary(const std::string& run_dir) {
  RunSummary s;
  const fs::path file = fs::path(run_dir) / "summary.json";
  std::error_code ec;
  if (fs::symlink_status(file, ec).type() == fs::file_type::not_found) return s;
  const json j = read_json<json>(read_text_file(file), file.string());
  try {
    s.steps = j.at("steps").get<int64_t>();
    s.params = j.at("params").get<int64_t>();
    s.best_step = j.at("best_step").get<int64_t>();
    s.best_val_acc = j.at("best_val_acc").get<double>();
    s.test_acc = j.at("test_acc").get<double>();
    s.wall_s = j.at("wall_s").get<double>();
    s.s_per_step = j.at("s_per_step").get<double>();
    if (j.contains("test_examples")) s.test_examples = j.at("test_examples").get<int64_t>();
    if (j.contains("device")) s.device = j.at("device").get<std::string>();
    if (j.contains("model_config") && j.contains("config")) {
      const nn::ClassifierConfig mc = nn::ClassifierConfig::from_json(j.at("model_config").dump());
      s.flops_per_batch = nn::model_flops(mc, j.at("config").at("batch_size").get<int64_t>(), mc.max_len).total();
    }
    s.done = true;
  } catch (const json::exception& ex) {
    throw Error(str_cat(file.string(), ": unreadable: ", excerpt(ex.what(), 240)));
  }
  return s;
}

MeanStd mean_std(const std::vector<double>& x) {
  MeanStd m;
  m.n = static_cast<int64_t>(x.size());
  if (x.empty()) return m;
  m.mean = sum(x) / static_cast<double>(x.size());
  if (x.size() > 1) {
    double ss = 0;
    for (double v : x) ss += (v - m.mean) * (v - m.mean);
    m.std = std::sqrt(ss / static_cast<double>(x.size() - 1));
  }
  return m;
}

std::string results_markdown(const Experiment& e) {
  const auto cs = cells(e);
  const std::string bl = e.baseline.empty() ? "baseline" : e.baseline;
  std::ostringstream o;
  o << "| task | model | seeds done | steps | best val acc % | test acc % | 95% binomial (n) | test - " << bl
    << " (points) | params | fwd GFLOP / batch | ms / step | time / " << bl << " | FLOPs / " << bl
    << " | wall s (all seeds) |\n";
  o << "|------|-------|-----------:|------:|---------------:|-----------:|------|------:|-------:|------:|----------:|"
       "------:|------:|------:|\n";
  for (const std::string& t : e.tasks) {
    const auto bit = e.baseline.empty() ? cs.end() : cs.find({t, e.baseline});
    const Cell* base = bit == cs.end() ? nullptr : &bit->second;
    const MeanStd bt = base ? mean_std(base->test()) : MeanStd{};
    for (const std::string& m : e.models) {
      const auto it = cs.find({t, m});
      if (it == cs.end()) continue;  // the model does not run on this task
      const Cell& c = it->second;
      const MeanStd test = mean_std(c.test()), fl = mean_std(c.flops);
      const double tr = base ? time_ratio(c, *base) : -1, fr = base ? ratio(c.flops, base->flops) : -1;
      // The binomial interval of an accuracy of test.mean at one run's test-set size.
      std::string binom = "-";
      if (test.n > 0 && c.test_examples > 0) {
        const Interval w = wilson(static_cast<int64_t>(std::llround(test.mean * static_cast<double>(c.test_examples))),
                                  c.test_examples);
        binom = "[" + fmt(100 * w.lo, 1) + ", " + fmt(100 * w.hi, 1) + "] (" + std::to_string(c.test_examples) + ")";
      }
      o << "| " << t << " | " << m << " | " << c.test_by_seed.size() << "/" << c.seeds << " | "
        << (c.test_by_seed.empty() ? "-" : std::to_string(c.steps)) << " | " << pct_ms(mean_std(c.val)) << " | "
        << pct_ms(test) << " | " << binom << " | "
        << (test.n > 0 && bt.n > 0 ? fmt(100 * (test.mean - bt.mean), 2) : "-") << " | "
        << (c.test_by_seed.empty() ? "-" : std::to_string(c.params)) << " | "
        << (fl.n > 0 ? fmt(fl.mean / 1e9, 2) : "-") << " | "
        << ms_per_step(c) << " | " << (tr > 0 ? fmt(tr, 3) : "-") << " | "
        << (fr > 0 ? fmt(fr, 3) : "-") << " | " << (c.wall.empty() ? "-" : fmt(sum(c.wall), 1)) << " |\n";
    }
  }
  margins_markdown(o, e, cs);
  return o.str();
}

std::string results_csv(const Experiment& e) {
  const auto cs = cells(e);
  std::ostringstream o;
  o << "task,model,seeds_done,seeds,steps,val_acc_mean,val_acc_std,test_acc_mean,test_acc_std,params,s_per_step,"
       "time_ratio_to_baseline,wall_s,flop_ratio_to_baseline,devices\n";
  for (const std::string& t : e.tasks) {
    const auto bit = e.baseline.empty() ? cs.end() : cs.find({t, e.baseline});
    const Cell* base = bit == cs.end() ? nullptr : &bit->second;
    for (const std::string& m : e.models) {
      const auto it = cs.find({t, m});
      if (it == cs.end()) continue;
      const Cell& c = it->second;
      const MeanStd val = mean_std(c.val), test = mean_std(c.test()), sps = mean_std(c.sps);
      const double tr = base ? time_ratio(c, *base) : -1, fr = base ? ratio(c.flops, base->flops) : -1;
      std::string devices;
      for (const std::string& d : c.devices) devices += (devices.empty() ? "" : " ") + d;
      o << t << "," << m << "," << c.test_by_seed.size() << "," << c.seeds << "," << c.steps << "," << fmt(val.mean, 6)
        << "," << fmt(val.std, 6) << "," << fmt(test.mean, 6) << "," << fmt(test.std, 6) << "," << c.params << ","
        << fmt(sps.mean, 6) << "," << (tr > 0 ? fmt(tr, 4) : "") << "," << fmt(sum(c.wall), 1) << ","
        << (fr > 0 ? fmt(fr, 4) : "") << "," << devices << "\n";
    }
  }
  return o.str();
}

}  // namespace hkt::tasks
