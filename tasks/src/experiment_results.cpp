// Experiment results (hkt/tasks/experiment.hpp): the state and summary of a run folder, and
// the tables over an experiment's finished runs (results_markdown, results_csv): means over
// seeds, paired margins with their t and bootstrap intervals, times per step.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/tasks/experiment.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/stats.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

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
