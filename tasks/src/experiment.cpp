#include "hkt/tasks/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/tasks/files.hpp"

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
  std::map<uint64_t, double> test_by_seed;  // test accuracy by seed, for the per-seed margins
  int64_t steps = 0, params = 0, seeds = 0;

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
    c.sps.push_back(s.s_per_step);
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

std::string signed_pts(double x) { return str_cat(x >= 0 ? "+" : "", fmt(100 * x, 2)); }

// Paired by seed: for each of the experiment's comparisons, the model's test
// accuracy minus the reference's on the same task and seed, and whether the
// mean margin exceeds both models' seed spread.
void margins_markdown(std::ostream& o, const Experiment& e,
                      const std::map<std::pair<std::string, std::string>, Cell>& cs) {
  std::ostringstream rows;
  for (const std::string& t : e.tasks) {
    for (const auto& [m, ref] : e.comparisons) {
      const Cell& c = cs.at({t, m});
      const Cell& base = cs.at({t, ref});
      std::vector<double> d;
      std::string per_seed;
      for (const auto& [seed, acc] : c.test_by_seed) {
        const auto it = base.test_by_seed.find(seed);
        if (it == base.test_by_seed.end()) continue;
        d.push_back(acc - it->second);
        if (!per_seed.empty()) per_seed += ", ";
        per_seed += str_cat("s", seed, " ", signed_pts(d.back()));
      }
      if (d.empty()) continue;
      const MeanStd md = mean_std(d), sm = mean_std(c.test()), sb = mean_std(base.test());
      size_t wins = 0;
      for (double x : d) wins += x > 0;
      std::string verdict = "- (one seed)";
      if (d.size() >= 2 && sm.n >= 2 && sb.n >= 2)
        verdict = std::string(std::fabs(md.mean) > std::max(sm.std, sb.std) ? "yes" : "no") + " (" + m + " " +
                  fmt(100 * sm.std, 2) + ", " + ref + " " + fmt(100 * sb.std, 2) + ")";
      rows << "| " << t << " | " << m << " | " << ref << " | " << d.size() << " | " << per_seed << " | "
           << signed_pts(md.mean) << " +- " << fmt(100 * md.std, 2) << " | " << wins << "/" << d.size() << " | " << verdict << " |\n";
    }
  }
  if (rows.str().empty()) return;
  o << "\nMargins (test accuracy, points): model minus reference, paired by seed; |mean| > spreads: whether "
       "the mean margin's size exceeds both models' seed standard deviations (the table above):\n\n"
    << "| task | model | reference | seeds paired | per seed | mean +- std | above reference | abs(mean) > spreads |\n"
    << "|------|-------|-----------|------:|------|------:|------:|------|\n"
    << rows.str();
}

double sum(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s;
}

}  // namespace

Experiment Experiment::from_json(const std::string& text, const std::string& out_dir_override) {
  json j;
  check_json_text(text, "experiment");
  try {
    j = json::parse(text);
  } catch (const json::exception& ex) {
    throw Error(str_cat("experiment: not valid JSON: ", excerpt(ex.what(), 240)));
  }
  HKT_CHECK(j.is_object(), "experiment: the file must hold a JSON object");
  static const char* known[] = {"name", "description", "notes", "out_dir", "baseline", "compare", "base", "tasks",
                                "models", "seeds"};
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
  for (auto t = tasks.begin(); t != tasks.end(); ++t)
    for (auto m = models.begin(); m != models.end(); ++m)
      for (uint64_t seed : e.seeds) {
        const std::string where = "experiment run " + t.key() + "/" + m.key() + "/seed" + std::to_string(seed);
        HKT_CHECK(t.value().is_object() && m.value().is_object(), where, ": task and model entries must be objects");
        json c = base;
        json task_fields = t.value();
        task_fields.erase("per_model");
        merge(c, task_fields);
        if (!t.value().contains("task")) c["task"] = t.key();
        merge(c, m.value());
        if (t.value().contains("per_model") && t.value().at("per_model").contains(m.key()))
          merge(c, t.value().at("per_model").at(m.key()));
        c["seed"] = seed;
        c["run_dir"] = (fs::path(e.out_dir) / t.key() / m.key() / ("seed" + std::to_string(seed))).string();
        ExperimentRun r;
        r.task = t.key();
        r.model = m.key();
        r.seed = seed;
        try {
          r.cfg = TrainConfig::from_json(c.dump());
        } catch (const Error& ex) {
          throw Error(str_cat(where, ": ", ex.what()));
        }
        e.runs.push_back(std::move(r));
      }
  return e;
}

Experiment Experiment::from_file(const std::string& path, const std::string& out_dir_override) {
  const std::string text = read_text_file(path);  // names the file when it cannot be read
  try {
    return from_json(text, out_dir_override);
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
  o << "| task | model | seeds done | steps | best val acc % | test acc % | test - " << bl
    << " (points) | params | ms / step | time / " << bl << " | FLOPs / " << bl << " | wall s (all seeds) |\n";
  o << "|------|-------|-----------:|------:|---------------:|-----------:|------:|-------:|----------:|------:|------:|"
       "------:|\n";
  for (const std::string& t : e.tasks) {
    const Cell* base = e.baseline.empty() ? nullptr : &cs.at({t, e.baseline});
    const MeanStd bt = base ? mean_std(base->test()) : MeanStd{};
    for (const std::string& m : e.models) {
      const Cell& c = cs.at({t, m});
      const MeanStd test = mean_std(c.test()), sps = mean_std(c.sps);
      const double tr = base ? ratio(c.sps, base->sps) : -1, fr = base ? ratio(c.flops, base->flops) : -1;
      o << "| " << t << " | " << m << " | " << c.test_by_seed.size() << "/" << c.seeds << " | "
        << (c.test_by_seed.empty() ? "-" : std::to_string(c.steps)) << " | " << pct_ms(mean_std(c.val)) << " | "
        << pct_ms(test) << " | "
        << (test.n > 0 && bt.n > 0 ? fmt(100 * (test.mean - bt.mean), 2) : "-") << " | "
        << (c.test_by_seed.empty() ? "-" : std::to_string(c.params)) << " | "
        << (sps.n > 0 ? fmt(1e3 * sps.mean, 1) : "-") << " | " << (tr > 0 ? fmt(tr, 3) : "-") << " | "
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
       "time_ratio_to_baseline,wall_s,flop_ratio_to_baseline\n";
  for (const std::string& t : e.tasks) {
    const Cell* base = e.baseline.empty() ? nullptr : &cs.at({t, e.baseline});
    for (const std::string& m : e.models) {
      const Cell& c = cs.at({t, m});
      const MeanStd val = mean_std(c.val), test = mean_std(c.test()), sps = mean_std(c.sps);
      const double tr = base ? ratio(c.sps, base->sps) : -1, fr = base ? ratio(c.flops, base->flops) : -1;
      o << t << "," << m << "," << c.test_by_seed.size() << "," << c.seeds << "," << c.steps << "," << fmt(val.mean, 6)
        << "," << fmt(val.std, 6) << "," << fmt(test.mean, 6) << "," << fmt(test.std, 6) << "," << c.params << ","
        << fmt(sps.mean, 6) << "," << (tr > 0 ? fmt(tr, 4) : "") << "," << fmt(sum(c.wall), 1) << ","
        << (fr > 0 ? fmt(fr, 4) : "") << "\n";
    }
  }
  return o.str();
}

}  // namespace hkt::tasks
