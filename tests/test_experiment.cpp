// Experiments (hkt/tasks/experiment.hpp): the file format, config merging,
// strict errors, run states, aggregation, and a tiny grid run end to end
// with an interrupted run that is resumed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/tasks/experiment.hpp"
#include "hkt/tasks/stats.hpp"
#include "hkt/tasks/train.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string fmt_ratio(double x) {  // as the results table writes a ratio
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", x);
  return b;
}

std::string grid(const std::string& out) {
  return R"({
    "name": "t", "description": "tiny", "notes": ["a note"], "out_dir": ")" + out + R"(", "baseline": "mha",
    "base": {"steps": 12, "batch_size": 16, "eval_every": 6, "log_every": 0, "lr": 0.003,
             "data": {"train_size": 128, "val_size": 32, "test_size": 32, "seq_len": 16}},
    "tasks": {"synthetic": {"data": {"seq_len": 12}}},
    "models": {"hkt": {"model": "hkt-tiny", "model_overrides": {"levels": 2}},
               "mha": {"model": "mha-tiny"}},
    "seeds": [3, 4]
  })";
}

RunOptions quiet() {
  RunOptions o;
  o.quiet = true;
  return o;
}

}  // namespace

TEST_CASE("experiment file: grid order, merging, run folders") {
  const Experiment e = Experiment::from_json(grid("out"));
  CHECK(e.name == "t");
  CHECK(e.baseline == "mha");
  REQUIRE(e.runs.size() == 4);
  CHECK(e.runs[0].model == "hkt");
  CHECK(e.runs[0].seed == 3);
  CHECK(e.runs[1].seed == 4);
  CHECK(e.runs[2].model == "mha");
  const TrainConfig& c = e.runs[1].cfg;
  CHECK(c.task == "synthetic");  // the task's key
  CHECK(c.data.seq_len == 12);   // task over base, key by key
  CHECK(c.data.train_size == 128);
  CHECK(c.steps == 12);
  CHECK(c.seed == 4);
  CHECK(c.model.preset() == "hkt-tiny");
  CHECK(c.model.config().attention.get<nn::HKTOptions>().levels == 2);
  CHECK(c.model.overrides_json() == R"({"levels":2})");
  CHECK(fs::path(c.run_dir) == fs::path("out") / "synthetic" / "hkt" / "seed4");
  CHECK(Experiment::from_json(grid("out"), "elsewhere").runs[0].cfg.run_dir.rfind("elsewhere", 0) == 0);
}

TEST_CASE("experiment file: errors name the problem") {
  auto err = [](const std::string& text) {
    try {
      Experiment::from_json(text);
    } catch (const Error& ex) {
      return std::string(ex.what());
    }
    return std::string("no error");
  };
  const std::string ok_models = R"("models": {"m": {"model": "mha-tiny"}})";
  CHECK(err("[1]").find("JSON object") != std::string::npos);
  CHECK(err("{").find("not valid JSON") != std::string::npos);
  CHECK(err(R"({"tasks": {"synthetic": {}}, )" + ok_models + R"(, "seeds": [1], "colour": 1})")
            .find("unknown key \"colour\"") != std::string::npos);
  CHECK(err(R"({"tasks": {"synthetic": {}}, )" + ok_models + "}").find("\"seeds\"") != std::string::npos);
  CHECK(err(R"({"tasks": {}, )" + ok_models + R"(, "seeds": [1]})").find("\"tasks\"") != std::string::npos);
  // Seeds are integers >= 0: a negative one would wrap, a fraction would be cut.
  CHECK(err(R"({"tasks": {"synthetic": {}}, )" + ok_models + R"(, "seeds": [1, -1]})")
            .find("\"seeds\" must hold integers >= 0, got -1") != std::string::npos);
  CHECK(err(R"({"tasks": {"synthetic": {}}, )" + ok_models + R"(, "seeds": [1.7]})")
            .find("got 1.7") != std::string::npos);
  CHECK(err(R"({"tasks": {"synthetic": {}}, )" + ok_models + R"(, "seeds": [1], "baseline": "x"})")
            .find("baseline \"x\"") != std::string::npos);
  // A bad training field names the run.
  const std::string bad = err(R"({"tasks": {"synthetic": {"batch_size": 0}}, )" + ok_models + R"(, "seeds": [5]})");
  CHECK(bad.find("synthetic/m/seed5") != std::string::npos);
  CHECK(bad.find("batch_size") != std::string::npos);
  CHECK(err(R"({"tasks": {"synthetic": {"stepz": 3}}, )" + ok_models + R"(, "seeds": [1]})").find("stepz") !=
        std::string::npos);
  CHECK_THROWS_AS(Experiment::from_file("/nonexistent/e.json"), Error);
}

TEST_CASE("experiment file: comparisons are every model against the baseline, then \"compare\"") {
  const std::string head = R"({"tasks": {"synthetic": {"steps": 5}}, "seeds": [1], "baseline": "mha",
    "models": {"hkt": {"model": "hkt-tiny"}, "one": {"model": "hkt-tiny"}, "mha": {"model": "mha-tiny"}})";
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(Experiment::from_json(head + "}").comparisons == Pairs{{"hkt", "mha"}, {"one", "mha"}});
  CHECK(Experiment::from_json(head + R"(, "compare": [["hkt", "one"]]})").comparisons ==
        Pairs{{"hkt", "mha"}, {"one", "mha"}, {"hkt", "one"}});
  auto err = [&](const std::string& compare) {
    try {
      Experiment::from_json(head + R"(, "compare": )" + compare + "}");
    } catch (const Error& ex) {
      return std::string(ex.what());
    }
    return std::string("no error");
  };
  CHECK(err(R"({"hkt": "one"})").find("\"compare\" must be an array") != std::string::npos);
  CHECK(err(R"([["hkt"]])").find("compare[0] must be a pair") != std::string::npos);
  CHECK(err(R"([["hkt", 3]])").find("compare[0] must be a pair") != std::string::npos);
  CHECK(err(R"([["hkt", "one"], ["hkt", "gru"]])").find("compare[1] names \"gru\"") != std::string::npos);
  CHECK(err(R"([["one", "one"]])").find("compares \"one\" with itself") != std::string::npos);
  CHECK(err(R"([["hkt", "mha"]])").find("already compared (every model is compared with the baseline)") !=
        std::string::npos);
  CHECK(err(R"([["hkt", "one"], ["hkt", "one"]])").find("compare[1]") != std::string::npos);
}

TEST_CASE("experiment file: per_model fields of a task apply last, to that model only") {
  const std::string text = R"({
    "base": {"lr": 0.001, "steps": 10},
    "tasks": {"synthetic": {"steps": 20, "per_model": {"mha": {"lr": 0.0005, "data": {"seq_len": 9}}}},
              "listops": {"steps": 30}},
    "models": {"hkt": {"model": "hkt-tiny"}, "mha": {"model": "mha-tiny", "lr": 0.002}},
    "seeds": [1]
  })";
  const Experiment e = Experiment::from_json(text);
  REQUIRE(e.runs.size() == 4);
  CHECK(e.runs[0].model == "hkt");
  CHECK(e.runs[0].cfg.lr == 0.001);       // base
  CHECK(e.runs[1].model == "mha");
  CHECK(e.runs[1].cfg.lr == 0.0005);      // per_model beats the model's own 0.002
  CHECK(e.runs[1].cfg.steps == 20);
  CHECK(e.runs[1].cfg.data.seq_len == 9);
  CHECK(e.runs[3].cfg.lr == 0.002);       // another task: the model's value
  auto err = [&](const std::string& per_model) {
    std::string t = text;
    t.replace(t.find(R"({"mha": {"lr": 0.0005, "data": {"seq_len": 9}}})"), 47, per_model);
    try {
      Experiment::from_json(t);
    } catch (const Error& ex) {
      return std::string(ex.what());
    }
    return std::string("no error");
  };
  CHECK(err(R"({"gru": {"lr": 0.1}})").find("per_model names \"gru\"") != std::string::npos);
  CHECK(err(R"({"mha": 3})").find("per_model \"mha\" must be an object") != std::string::npos);
  CHECK(err(R"([1])").find("\"per_model\" must be an object") != std::string::npos);
  CHECK(err(R"({"mha": {"lrr": 0.1}})").find("lrr") != std::string::npos);
}

TEST_CASE("last_logged_step: the last line that parses, torn lines skipped") {
  TempDir dir("laststep");
  const fs::path run = dir.path;
  CHECK(last_logged_step(run.string()) == -1);  // no metrics.jsonl
  auto write = [&](const std::string& text) { std::ofstream(run / "metrics.jsonl", std::ios::binary) << text; };
  write("");
  CHECK(last_logged_step(run.string()) == -1);
  write(R"({"event":"train","step":50,"loss":1.5})" "\n" R"({"event":"val","step":100,"val_acc":0.5})" "\n");
  CHECK(last_logged_step(run.string()) == 100);
  // A kill mid-line leaves a torn last line: the one before it counts.
  write(R"({"event":"train","step":50,"loss":1.5})" "\n" R"({"event":"train","step":1)");
  CHECK(last_logged_step(run.string()) == 50);
  // "step" elsewhere in a line (a key named "steps", a string) is not the step.
  write(R"({"event":"train","step":7})" "\n" R"({"event":"test","steps":900,"note":"\"step\":3"})" "\n\n");
  CHECK(last_logged_step(run.string()) == 7);
}

// A finished run's summary.json with test and best validation accuracy `acc`.
static void write_summary(const std::string& run_dir, double acc) {
  fs::create_directories(run_dir);
  std::ofstream(fs::path(run_dir) / "summary.json")
      << nlohmann::json{{"steps", 12}, {"params", 1}, {"best_step", 12}, {"best_val_acc", acc}, {"test_acc", acc},
                        {"wall_s", 1.0}, {"s_per_step", 0.1}}.dump();
}

TEST_CASE("results table: margins against the baseline, paired by seed") {
  TempDir tmp("experiment_margins");
  const Experiment e = Experiment::from_json(R"({
    "name": "m", "out_dir": ")" + tmp.path.string() + R"(", "baseline": "mha", "compare": [["hkt", "one"]],
    "base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"synthetic": {}},
    "models": {"hkt": {"model": "hkt-tiny"}, "mha": {"model": "mha-tiny"}, "one": {"model": "hkt-tiny"}},
    "seeds": [1, 2, 3]
  })");
  // The ListOps table of docs/results.md, written as finished runs' summaries.
  const std::map<std::string, std::vector<double>> acc = {
      {"hkt", {0.4905, 0.5045, 0.4690}}, {"mha", {0.4825, 0.4680, 0.4755}}, {"one", {0.40, -1, -1}}};
  for (const ExperimentRun& r : e.runs) {
    const double a = acc.at(r.model)[r.seed - 1];
    if (a < 0) continue;  // not run
    write_summary(r.cfg.run_dir, a);
  }
  const std::string md = results_markdown(e);
  INFO(md);
  CHECK(md.find("Comparisons (test accuracy, points): model minus reference") != std::string::npos);
  // Differences +0.80, +3.65, -0.65: mean +1.27, std 2.19; the t interval with 2
  // degrees of freedom, 1.27 +- 4.3027 x 2.19 / sqrt(3), holds 0. No run has
  // per-example predictions, so no bootstrap interval.
  CHECK(md.find("| synthetic | hkt | mha | 3 | s1 +0.80, s2 +3.65, s3 -0.65 | +1.27 +- 2.19 | [-4.17, +6.70] | - | "
                "not distinguishable (t interval over 3 seeds) |") != std::string::npos);
  // One paired seed and no predictions: no verdict; the baseline has no row of its own.
  CHECK(md.find("| synthetic | one | mha | 1 | s1 -8.25 | -8.25 +- 0.00 | - | - | - (one seed, no per-example "
                "predictions) |") != std::string::npos);
  CHECK(md.find("| synthetic | mha |") == md.find("| synthetic | mha | 3/3 |"));  // only its line in the main table
  // The file's "compare" pair, after the baseline's rows: only the seeds both have.
  CHECK(md.find("| synthetic | hkt | one | 1 | s1 +9.05 | +9.05 +- 0.00 | - | - | - (one seed") >
        md.find("| synthetic | one | mha |"));
}

TEST_CASE("results table: \"compare\" alone gives the margins table without a baseline") {
  TempDir tmp("experiment_compare");
  const Experiment e = Experiment::from_json(R"({
    "name": "c", "out_dir": ")" + tmp.path.string() + R"(", "compare": [["hkt", "one"]],
    "base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-tiny"}, "one": {"model": "hkt-tiny"}},
    "seeds": [1, 2]
  })");
  for (const ExperimentRun& r : e.runs) {
    write_summary(r.cfg.run_dir, (r.model == "hkt" ? 0.5 : 0.4) + 0.01 * static_cast<double>(r.seed));
  }
  const std::string md = results_markdown(e);
  INFO(md);
  // Both seeds +10.00: no spread in the margin, so the t interval is the point.
  CHECK(md.find("| synthetic | hkt | one | 2 | s1 +10.00, s2 +10.00 | +10.00 +- 0.00 | [+10.00, +10.00] | - | "
                "higher (t interval over 2 seeds) |") != std::string::npos);
}

static void write_predictions(const std::string& run_dir, const std::vector<int>& correct) {
  std::ofstream f(fs::path(run_dir) / kTestPredictionsFile);
  f << "index,label,predicted\n";
  for (size_t i = 0; i < correct.size(); ++i) f << i << "," << 3 << "," << (correct[i] ? 3 : 4) << "\n";
}

TEST_CASE("results table: binomial intervals, and the paired bootstrap over test examples") {
  TempDir tmp("experiment_bootstrap");
  const Experiment e = Experiment::from_json(R"({
    "name": "b", "out_dir": ")" + tmp.path.string() + R"(", "baseline": "mha",
    "base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-tiny"}, "mha": {"model": "mha-tiny"}},
    "seeds": [1]
  })");
  // 400 test examples: hkt right on 300, mha on 260; they disagree on 60 (hkt alone right on 50, mha alone on 10).
  std::vector<int> h(400, 0), m(400, 0);
  for (int i = 0; i < 250; ++i) h[i] = m[i] = 1;
  for (int i = 250; i < 300; ++i) h[i] = 1;
  for (int i = 300; i < 310; ++i) m[i] = 1;
  for (const ExperimentRun& r : e.runs) {
    const bool is_h = r.model == "hkt";
    write_summary(r.cfg.run_dir, is_h ? 0.75 : 0.65);
    nlohmann::json s = nlohmann::json::parse(std::ifstream(fs::path(r.cfg.run_dir) / "summary.json"));
    s["test_examples"] = 400;
    std::ofstream(fs::path(r.cfg.run_dir) / "summary.json") << s.dump();
    write_predictions(r.cfg.run_dir, is_h ? h : m);
  }
  const std::string md = results_markdown(e);
  INFO(md);
  // Wilson 95% interval of 300/400: [70.5, 79.0].
  CHECK(md.find("| 75.00 +- 0.00 | [70.5, 79.0] (400) |") != std::string::npos);
  // The difference +10 points; the bootstrap interval of a paired difference with 50 vs 10
  // discordant examples has half-width about 1.96 x sqrt(60 - 40^2/400) / 400 = 3.7 points.
  const size_t row = md.find("| synthetic | hkt | mha | 1 | s1 +10.00 [+");
  REQUIRE(row != std::string::npos);
  double lo = 0, hi = 0;
  REQUIRE(std::sscanf(md.c_str() + row, "| synthetic | hkt | mha | 1 | s1 +10.00 [%lf, %lf]", &lo, &hi) == 2);
  CHECK(lo == doctest::Approx(10 - 3.7).epsilon(0.08));
  CHECK(hi == doctest::Approx(10 + 3.7).epsilon(0.08));
  CHECK(md.find("higher on this test set (one seed: training randomness not covered)") != std::string::npos);
}

TEST_CASE("interval estimates: t quantiles, Wilson, paired bootstrap") {
  CHECK(t975(1) == doctest::Approx(12.7062));
  CHECK(t975(2) == doctest::Approx(4.3027));
  CHECK(t975(30) == doctest::Approx(2.0423));
  CHECK(t975(50) == doctest::Approx(2.0086).epsilon(1e-3));  // table value 2.0086
  CHECK(t975(1000000) == doctest::Approx(1.96).epsilon(1e-3));
  CHECK_THROWS_AS(t975(0), Error);
  CHECK_FALSE(t_interval({0.5}).defined);
  const Interval w = wilson(50, 100);  // the textbook example: [0.4038, 0.5962]
  CHECK(w.lo == doctest::Approx(0.4038).epsilon(1e-3));
  CHECK(w.hi == doctest::Approx(0.5962).epsilon(1e-3));
  CHECK(wilson(0, 10).lo == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(wilson(0, 10).hi > 0.2);
  // Identical predictions: the difference is 0 in every resample.
  const std::vector<uint8_t> a = {1, 0, 1, 1, 0, 1, 0, 0, 1, 1};
  const Interval z = paired_bootstrap({{a, a}}, 500);
  CHECK(z.lo == 0.0);
  CHECK(z.hi == 0.0);
  // All right against all wrong: +1 in every resample.
  const Interval one = paired_bootstrap({{std::vector<uint8_t>(7, 1), std::vector<uint8_t>(7, 0)}}, 500);
  CHECK(one.lo == 1.0);
  CHECK(one.hi == 1.0);
  // Reproducible, and different seeds move it only within the Monte Carlo error.
  const std::vector<uint8_t> b = {0, 0, 1, 0, 0, 1, 1, 0, 0, 1};
  const Interval r1 = paired_bootstrap({{a, b}}, 2000), r2 = paired_bootstrap({{a, b}}, 2000);
  CHECK(r1.lo == r2.lo);
  CHECK(r1.hi == r2.hi);
  CHECK(r1.lo < 0.1);
  CHECK(r1.hi > 0.1);
  CHECK_THROWS_AS(paired_bootstrap({{a, std::vector<uint8_t>(3, 1)}}), Error);
}

TEST_CASE("experiment file: a model's own tasks and seeds, and the training order") {
  const Experiment e = Experiment::from_json(R"({
    "name": "o", "order": "task",
    "base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"a": {"task": "synthetic"}, "b": {"task": "synthetic"}},
    "models": {"hkt": {"model": "hkt-tiny"}, "abl": {"model": "hkt-tiny", "tasks": ["a"], "seeds": [7], "steps": 6}},
    "seeds": [1, 2]
  })");
  CHECK(e.order == "task");
  std::vector<std::string> ids;
  for (const ExperimentRun& r : e.runs) ids.push_back(r.task + "/" + r.model + "/" + std::to_string(r.seed));
  CHECK(ids == std::vector<std::string>{"a/hkt/1", "a/hkt/2", "a/abl/7", "b/hkt/1", "b/hkt/2"});
  CHECK(e.runs[2].cfg.steps == 6);
  CHECK(e.seeds == std::vector<uint64_t>{1, 2, 7});
  const std::string md = results_markdown(e);
  CHECK(md.find("| b | abl |") == std::string::npos);  // not run there, so not in the table
  const std::string head = R"({"base": {"steps": 2}, "tasks": {"a": {"task": "synthetic"}}, )";
  hkt::test::check_error([&] { Experiment::from_json(head + R"("models": {"m": {"model": "hkt-tiny", "tasks": ["z"]}}, "seeds": [1]})"); },
              "\"tasks\" names \"z\", which is not one of the tasks");
  hkt::test::check_error([&] { Experiment::from_json(head + R"("models": {"m": {"model": "hkt-tiny", "seeds": [-1]}}, "seeds": [1]})"); },
              "\"seeds\" must hold integers >= 0");
  hkt::test::check_error([&] { Experiment::from_json(head + R"("models": {"m": {"model": "hkt-tiny"}}, "seeds": [1], "order": "x"})"); },
              "\"order\" must be \"seed\" or \"task\"");
}

TEST_CASE("mean and sample standard deviation") {
  const MeanStd a = mean_std({0.5, 0.7});
  CHECK(a.n == 2);
  CHECK(a.mean == doctest::Approx(0.6));
  CHECK(a.std == doctest::Approx(std::sqrt(0.02)));
  CHECK(mean_std({0.3}).std == 0.0);
  CHECK(mean_std({}).n == 0);
}

TEST_CASE("a tiny grid runs, resumes an interrupted run and aggregates") {
  TempDir tmp("experiment_grid");
  const Experiment e = Experiment::from_json(grid(tmp.path.string()));
  for (const ExperimentRun& r : e.runs) CHECK(run_state(r.cfg.run_dir) == RunState::New);
  // The first run is interrupted after 5 steps, then resumed; the others run whole.
  RunOptions stop = quiet();
  stop.stop_after = 5;
  train(e.runs[0].cfg, stop);
  CHECK(run_state(e.runs[0].cfg.run_dir) == RunState::Started);
  CHECK_FALSE(read_summary(e.runs[0].cfg.run_dir).done);
  const std::string partial = results_markdown(e);
  CHECK(partial.find("| synthetic | hkt | 0/2 |") != std::string::npos);
  resume(e.runs[0].cfg.run_dir, quiet());
  for (size_t i = 1; i < e.runs.size(); ++i) train(e.runs[i].cfg, quiet());
  for (const ExperimentRun& r : e.runs) {
    CHECK(run_state(r.cfg.run_dir) == RunState::Done);
    const RunSummary s = read_summary(r.cfg.run_dir);
    CHECK(s.done);
    CHECK(s.steps == 12);
    CHECK(s.test_acc >= 0.0);
  }
  const std::string md = results_markdown(e);
  CHECK(md.find("| synthetic | hkt | 2/2 | 12 |") != std::string::npos);
  CHECK(md.find("| synthetic | mha | 2/2 | 12 |") != std::string::npos);
  CHECK(md.find("| 1.000 |") != std::string::npos);  // the baseline's own time ratio
  const std::string csv = results_csv(e);
  CHECK(csv.rfind("task,model,seeds_done", 0) == 0);
  CHECK(csv.find("synthetic,hkt,2,2,12,") != std::string::npos);
  // FLOPs per batch from the cost model, for the run's model at its batch size and length.
  const RunSummary sh = read_summary(e.runs[0].cfg.run_dir), sm = read_summary(e.runs[2].cfg.run_dir);
  nn::ClassifierConfig mc;
  {
    std::ifstream f(fs::path(e.runs[0].cfg.run_dir) / "summary.json");
    mc = nn::ClassifierConfig::from_json(nlohmann::json::parse(f).at("model_config").dump());
  }
  CHECK(mc.attention.get<nn::HKTOptions>().levels == 2);
  CHECK(sh.flops_per_batch == doctest::Approx(nn::model_flops(mc, 16, mc.max_len).total()));
  CHECK(sh.flops_per_batch > sm.flops_per_batch);
  CHECK(sm.flops_per_batch > 0);
  const std::string ratio = fmt_ratio(sh.flops_per_batch / sm.flops_per_batch);
  CHECK(md.find("| FLOPs / mha |") != std::string::npos);
  CHECK(md.find("| " + ratio + " |") != std::string::npos);
  // The line of `text` that starts at the first `prefix`.
  auto row = [](const std::string& text, const std::string& prefix) {
    const size_t at = text.find(prefix);
    return text.substr(at, text.find('\n', at) - at);
  };
  const std::string hkt_row = row(csv, "synthetic,hkt,");
  // The last two fields: the FLOP ratio, then where the runs trained.
  CHECK(hkt_row.substr(hkt_row.rfind(',') + 1) == "cpu");
  const std::string no_device = hkt_row.substr(0, hkt_row.rfind(','));
  CHECK(std::stod(no_device.substr(no_device.rfind(',') + 1)) ==
        doctest::Approx(sh.flops_per_batch / sm.flops_per_batch).epsilon(1e-3));
  CHECK(sh.device == "cpu");

  // A run trained on another device: its cell's time per step is not averaged with the CPU run's,
  // and no time ratio is given across devices; the FLOP ratio still is.
  const fs::path moved = fs::path(e.runs[1].cfg.run_dir) / "summary.json";
  nlohmann::json js;
  {
    std::ifstream f(moved);
    js = nlohmann::json::parse(f);
  }
  CHECK(js.at("device") == "cpu");
  js["device"] = "cuda:0";
  {
    std::ofstream f(moved);
    f << js.dump(2);
  }
  CHECK(read_summary(e.runs[1].cfg.run_dir).device == "cuda:0");
  const std::string mixed_row = row(results_markdown(e), "| synthetic | hkt |");
  CHECK(mixed_row.find("| mixed devices | - | " + ratio + " |") != std::string::npos);
  CHECK(results_csv(e).find(",cpu cuda:0\n") != std::string::npos);
  // Both of a cell's runs on the GPU: its time is shown with the device, and still no ratio to the CPU baseline.
  js["device"] = "cuda:0";
  {
    std::ofstream f(fs::path(e.runs[0].cfg.run_dir) / "summary.json");
    f << js.dump(2);
  }
  const std::string gpu_row = row(results_markdown(e), "| synthetic | hkt |");
  CHECK(gpu_row.find(" (cuda:0) | - | ") != std::string::npos);
}

TEST_CASE("the committed experiment files load, and every run's config is valid") {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(HKT_EXPERIMENTS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    INFO(entry.path().string());
    const Experiment e = Experiment::from_file(entry.path().string());
    CHECK(!e.runs.empty());
    CHECK(e.runs.size() <= e.tasks.size() * e.models.size() * e.seeds.size());
    // Every run is distinct, every task and model is used.
    std::set<std::string> ids, tasks, models;
    for (const ExperimentRun& r : e.runs) {
      ids.insert(r.task + "/" + r.model + "/" + std::to_string(r.seed));
      tasks.insert(r.task);
      models.insert(r.model);
    }
    CHECK(ids.size() == e.runs.size());
    CHECK(tasks.size() == e.tasks.size());
    CHECK(models.size() == e.models.size());
    for (const ExperimentRun& r : e.runs) CHECK_NOTHROW(r.cfg.validate());
  }
  CHECK(files >= 3);  // paper, cpu, cpu-tune
  // Files that record the same tuning's choice ("tuning": {"recorded"}) record the same choice. A family
  // whose tuning runs are trained by another tuning file ("shared_with") counts as that file's: so
  // cpu-peers.json's record of hkt is checked against cpu-fair.json's.
  std::map<std::string, nlohmann::json> recorded;  // tuning file / task / family -> fields
  const auto read_json = [](const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); };
  std::map<std::string, nlohmann::json> tuning_files;  // read once each
  const auto tuned_in = [&](const std::string& tune, const std::string& family) {
    auto [it, fresh] = tuning_files.emplace(tune, nlohmann::json());
    if (fresh) it->second = read_json(fs::path(HKT_EXPERIMENTS_DIR) / tune);
    const nlohmann::json& t = it->second;
    std::set<std::string> owners;
    for (const auto& m : t.at("models").items())
      if (m.value().value("family", m.key()) == family)
        owners.insert(m.value().value("shared_with", tune));
    REQUIRE(owners.size() == 1);  // one family is trained by one file
    return *owners.begin();
  };
  for (const auto& entry : fs::directory_iterator(HKT_EXPERIMENTS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    const nlohmann::json j = read_json(entry.path());
    if (!j.contains("tuning") || !j.at("tuning").contains("recorded")) continue;
    const std::string tune = j.at("tuning").at("experiment").get<std::string>();
    for (const auto& t : j.at("tuning").at("recorded").items())
      for (const auto& f : t.value().items()) {
        const std::string key = tuned_in(tune, f.key()) + " / " + t.key() + " / " + f.key();
        INFO(entry.path().string() << ": " << key);
        const auto [it, fresh] = recorded.emplace(key, f.value());
        CHECK((fresh || it->second == f.value()));
      }
  }
  CHECK(recorded.count("cpu-fair-tune.json / listops-long / hkt") == 1);
  CHECK(recorded.count("cpu-peers-tune.json / listops-long / hkt") == 0);  // keyed by the file that trains it
  // What the cpu protocol's sweep chose, per task and model.
  const Experiment cpu = Experiment::from_file(std::string(HKT_EXPERIMENTS_DIR) + "/cpu.json");
  for (const ExperimentRun& r : cpu.runs) {
    INFO(r.task << "/" << r.model);
    const double want = r.task == "listops" ? (r.model == "mha" ? 5e-4 : 1e-3)
                        : r.task == "cifar10" ? (r.model == "mha" ? 1e-3 : 5e-4)
                                              : 5e-4;
    CHECK(r.cfg.lr == want);
  }
}

TEST_CASE("listops-long-seeds.json's seeds 1-3 are the fair test's runs: the same configs but for run_dir") {
  // The 10-seed comparison takes seeds 1-3 from cpu-fair.json's archive (tools/grid-archive restore
  // --archive experiments/results/cpu-fair): valid only while every field but run_dir agrees.
  const std::string dir = HKT_EXPERIMENTS_DIR;
  const Experiment seeds = Experiment::from_file(dir + "/listops-long-seeds.json");
  const Experiment fair = Experiment::from_file(dir + "/cpu-fair.json");
  int64_t compared = 0;
  for (const ExperimentRun& r : seeds.runs)
    for (const ExperimentRun& f : fair.runs)
      if (f.task == r.task && f.model == r.model && f.seed == r.seed) {
        INFO(r.task << "/" << r.model << "/seed" << r.seed);
        TrainConfig a = r.cfg, b = f.cfg;
        a.run_dir = b.run_dir = "";
        CHECK(a.to_json() == b.to_json());
        ++compared;
      }
  CHECK(compared == 6);  // hkt and mha-matched, seeds 1-3
  CHECK(seeds.runs.size() == 20);
}

TEST_CASE("experiment file: settings taken from a tuning experiment's best validation run") {
  TempDir tmp("experiment_tuning");
  const std::string tune_out = (tmp.path / "tune").string();
  std::ofstream(tmp.path / "tune.json") << R"({
    "name": "t", "out_dir": ")" + tune_out + R"(",
    "base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"a": {"task": "synthetic"}},
    "models": {"h-lr1": {"model": "hkt-tiny", "family": "h", "lr": 0.001, "model_overrides": {"dropout": 0.0}},
               "h-lr2": {"model": "hkt-tiny", "family": "h", "lr": 0.002, "model_overrides": {"dropout": 0.1}},
               "m-lr1": {"model": "mha-tiny", "family": "m", "lr": 0.001, "model_overrides": {"dropout": 0.1}}},
    "seeds": [0]
  })";
  const std::string main_text = R"({
    "name": "f", "out_dir": ")" + (tmp.path / "main").string() + R"(",
    "tuning": {"experiment": "tune.json"},
    "base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"a": {"task": "synthetic", "per_model": {"h2": {"lr": 0.005}}}},
    "models": {"h": {"model": "hkt-tiny", "tuned_as": "h"}, "h2": {"model": "hkt-tiny", "tuned_as": "h"},
               "m": {"model": "mha-tiny", "tuned_as": "m"}, "plain": {"model": "mha-tiny"}},
    "seeds": [1, 2]
  })";
  std::ofstream(tmp.path / "main.json") << main_text;
  const std::string main_file = (tmp.path / "main.json").string();
  // Nothing tuned yet: the tuned runs wait, the plain one does not.
  Experiment e = Experiment::from_file(main_file);
  for (const ExperimentRun& r : e.runs) {
    CAPTURE(r.model);
    CHECK(r.waiting.empty() == (r.model == "plain"));
  }
  CHECK(e.runs[0].waiting.find("0 of 2 runs of \"h\" on a") != std::string::npos);
  // A recorded choice stands in for h's tuning while its runs are not here; m still waits.
  const std::string rec_h = R"("recorded": {"a": {"h": {"lr": 0.003, "model_overrides.dropout": 0.0, "run": "h-lr1",
                                                      "best_val_acc": 0.4}}})";
  const auto recorded = [&](const std::string& rec) {
    std::string s = main_text;
    const std::string from = "\"experiment\": \"tune.json\"";
    s.replace(s.find(from), from.size(), from + ", " + rec);
    std::ofstream(tmp.path / "rec.json") << s;
    return (tmp.path / "rec.json").string();
  };
  {
    const Experiment r = Experiment::from_file(recorded(rec_h));
    for (const ExperimentRun& run : r.runs) {
      CAPTURE(run.model);
      CHECK(run.waiting.empty() == (run.model != "m"));
      if (run.model == "h") {
        CHECK(run.cfg.lr == 0.003);
        CHECK(nlohmann::json::parse(run.cfg.model.overrides_json()).at("dropout") == 0.0);
        CHECK(run.cfg.model.config().dropout == 0.0);
      }
      if (run.model == "h2") CHECK(run.cfg.lr == 0.005);  // per_model still applies after it
    }
    REQUIRE(r.tuning_choices.size() == 1);
    CHECK(r.tuning_choices[0].find("a / h: lr 0.003, model_overrides.dropout 0.0 as recorded") == 0);
    CHECK(r.tuning_choices[0].find("from h-lr1, best validation accuracy 40.00%; 0 of 2 tuning runs") !=
          std::string::npos);
  }
  hkt::test::check_error(
      [&] { Experiment::from_file(recorded(R"("recorded": {"a": {"h": {"lr": 0.003}}})")); },
      "\"recorded\": \"a\": \"h\": the tuned field \"model_overrides.dropout\" is missing");
  hkt::test::check_error(
      [&] { Experiment::from_file(recorded(R"("recorded": {"a": {"h": {"lr": 0.003, "model_overrides.dropout": 0.0, "wd": 1}}})")); },
      "unknown key \"wd\"");
  hkt::test::check_error(
      [&] { Experiment::from_file(recorded(R"("recorded": {"a": {"z": {"lr": 0.003, "model_overrides.dropout": 0.0}}})")); },
      "has no run of family \"z\" on task \"a\"");
  hkt::test::check_error(
      [&] { Experiment::from_file(recorded(R"("recorded": {"b": {"h": {"lr": 0.003, "model_overrides.dropout": 0.0}}})")); },
      "has no task \"b\"");
  hkt::test::check_error(
      [&] { Experiment::from_file(recorded(R"("recorded": {"a": {"h": {"lr": [1], "model_overrides.dropout": 0.0}}})")); },
      "\"lr\" must be a number, string or boolean");
  hkt::test::check_error(
      [&] { Experiment::from_file(recorded(R"("recorded": {"a": {"h": {"lr": 0.003, "model_overrides.dropout": 0.0, "best_val_acc": 37.35}}})")); },
      "\"best_val_acc\" must be a fraction in [0, 1]");
  // h-lr2 has the best validation accuracy of family h; m's only run is m-lr1.
  const Experiment t = Experiment::from_file((tmp.path / "tune.json").string());
  for (const ExperimentRun& r : t.runs) {
    fs::create_directories(r.cfg.run_dir);
    const double v = r.model == "h-lr1" ? 0.40 : r.model == "h-lr2" ? 0.55 : 0.30;
    std::ofstream(fs::path(r.cfg.run_dir) / "summary.json")
        << nlohmann::json{{"steps", 12}, {"params", 1}, {"best_step", 12}, {"best_val_acc", v}, {"test_acc", 0.9},
                          {"wall_s", 1.0}, {"s_per_step", 0.1}}.dump();
    if (r.model == "m-lr1") continue;
    // One of h's runs not finished yet: h's runs still wait, m's do not.
    if (r.model == "h-lr2") fs::remove(fs::path(r.cfg.run_dir) / "summary.json");
  }
  e = Experiment::from_file(main_file);
  for (const ExperimentRun& r : e.runs) CHECK(r.waiting.empty() == (r.model == "plain" || r.model == "m"));
  std::ofstream(fs::path(t.runs[1].cfg.run_dir) / "summary.json")
      << nlohmann::json{{"steps", 12}, {"params", 1}, {"best_step", 12}, {"best_val_acc", 0.55}, {"test_acc", 0.1},
                        {"wall_s", 1.0}, {"s_per_step", 0.1}}.dump();
  e = Experiment::from_file(main_file);
  for (const ExperimentRun& r : e.runs) {
    CAPTURE(r.model);
    CHECK(r.waiting.empty());
    const nlohmann::json mo = nlohmann::json::parse(r.cfg.model.overrides_json());
    if (r.model == "h") {
      CHECK(r.cfg.lr == 0.002);
      CHECK(mo.at("dropout") == 0.1);
    } else if (r.model == "h2") {  // the task's per_model applies after the tuned fields
      CHECK(r.cfg.lr == 0.005);
      CHECK(mo.at("dropout") == 0.1);
    } else if (r.model == "m") {
      CHECK(r.cfg.lr == 0.001);
      CHECK(mo.at("dropout") == 0.1);
    } else {
      CHECK(r.cfg.lr == TrainConfig{}.lr);
    }
  }
  REQUIRE(e.tuning_choices.size() == 2);
  CHECK(e.tuning_choices[0].find("a / h: lr 0.002, model_overrides.dropout 0.1 from h-lr2 (best validation "
                                 "accuracy 55.00% of 2 tuning runs") == 0);
  // Once the tuning runs are all here they choose: a record that agrees is fine, one that differs is an error.
  {
    const Experiment r = Experiment::from_file(
        recorded(R"("recorded": {"a": {"h": {"lr": 0.002, "model_overrides.dropout": 0.1}}})"));
    REQUIRE(r.tuning_choices.size() == 2);
    CHECK(r.tuning_choices[0] == e.tuning_choices[0]);
  }
  hkt::test::check_error([&] { Experiment::from_file(recorded(rec_h)); },
                         "\"recorded\": \"a\": \"h\": \"lr\" is 0.003 but the finished tuning runs of");
  // Errors: a family the tuning file does not have; tuned_as without tuning.
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = main_text;
    s.replace(s.find(from), from.size(), to);
    std::ofstream(tmp.path / "bad.json") << s;
    return (tmp.path / "bad.json").string();
  };
  hkt::test::check_error([&] { Experiment::from_file(with("\"tuned_as\": \"m\"", "\"tuned_as\": \"z\"")); },
                         "has no run of family \"z\" on task \"a\"");
  hkt::test::check_error([&] { Experiment::from_file(with("\"tuning\": {\"experiment\": \"tune.json\"},", "")); },
                         "\"tuned_as\" needs a top-level \"tuning\"");
  hkt::test::check_error([&] { Experiment::from_file(with("\"experiment\": \"tune.json\"", "\"experiment\": \"nope.json\"")); },
                         "nope.json");
}

TEST_CASE("experiment file: runs shared with another experiment are trained there once") {
  TempDir tmp("experiment_shared");
  const std::string common = R"("base": {"steps": 12, "batch_size": 16, "data": {"train_size": 64, "val_size": 16, "test_size": 16}},
    "tasks": {"a": {"task": "synthetic"}}, "seeds": [1, 2])";
  std::ofstream(tmp.path / "fair.json") << R"({"name": "fair", "out_dir": ")" + (tmp.path / "fair").string() +
                                               R"(", "models": {"h": {"model": "hkt-tiny"}, "m": {"model": "mha-tiny"}}, )" +
                                               common + "}";
  const std::string peers_text = R"({"name": "peers", "out_dir": ")" + (tmp.path / "peers").string() +
                                 R"(", "models": {"h": {"model": "hkt-tiny", "shared_with": "fair.json"},
                                                  "l": {"model": "mha-tiny", "lr": 0.002}}, )" + common + "}";
  std::ofstream(tmp.path / "peers.json") << peers_text;
  const std::string peers_file = (tmp.path / "peers.json").string();
  Experiment e = Experiment::from_file(peers_file);
  const Experiment fair = Experiment::from_file((tmp.path / "fair.json").string());
  REQUIRE(e.runs.size() == 4);
  for (const ExperimentRun& r : e.runs) {
    CAPTURE(r.model);
    if (r.model == "h") {
      // The run folder is fair's; not finished there, so the run waits and says where it is trained.
      CHECK(r.cfg.run_dir == (tmp.path / "fair" / "a" / "h" / ("seed" + std::to_string(r.seed))).string());
      CHECK(r.shared_with == (tmp.path / "fair.json").string());
      CHECK(r.waiting.find("trained by ") == 0);
      CHECK(r.waiting.find("not finished there") != std::string::npos);
    } else {
      CHECK(r.cfg.run_dir.find((tmp.path / "peers").string()) == 0);
      CHECK(r.shared_with.empty());
      CHECK(r.waiting.empty());
    }
  }
  // Finished there (seed 1 only): that run is done here too, seed 2 still waits.
  for (const ExperimentRun& r : fair.runs)
    if (r.model == "h" && r.seed == 1) {
      fs::create_directories(r.cfg.run_dir);
      std::ofstream(fs::path(r.cfg.run_dir) / "summary.json")
          << nlohmann::json{{"steps", 12}, {"params", 1}, {"best_step", 12}, {"best_val_acc", 0.5}, {"test_acc", 0.5},
                            {"wall_s", 1.0}, {"s_per_step", 0.1}}.dump();
    }
  e = Experiment::from_file(peers_file);
  for (const ExperimentRun& r : e.runs)
    if (r.model == "h") {
      CAPTURE(r.seed);
      CHECK(r.waiting.empty() == (r.seed == 1));
      if (r.seed == 1) CHECK(run_state(r.cfg.run_dir) == RunState::Done);
    }
  // Errors: a config that differs names the field; a model the other file lacks; a missing file;
  // a file that shares runs of its own.
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = peers_text;
    s.replace(s.find(from), from.size(), to);
    std::ofstream(tmp.path / "bad.json") << s;
    return (tmp.path / "bad.json").string();
  };
  hkt::test::check_error(
      [&] { Experiment::from_file(with(R"("shared_with": "fair.json"})", R"("shared_with": "fair.json", "lr": 0.01})")); },
      "its config differs from");
  hkt::test::check_error(
      [&] { Experiment::from_file(with(R"("shared_with": "fair.json"})", R"("shared_with": "fair.json", "lr": 0.01})")); },
      "in \"lr\"");
  hkt::test::check_error(
      [&] { Experiment::from_file(with(R"("model": "mha-tiny", "lr")", R"("model": "mha-tiny", "shared_with": "fair.json", "lr")")); },
      "has no run a/l/seed1");
  hkt::test::check_error([&] { Experiment::from_file(with("\"shared_with\": \"fair.json\"", "\"shared_with\": \"nope.json\"")); },
                         "nope.json");
  hkt::test::check_error([&] { Experiment::from_file(with("\"shared_with\": \"fair.json\"", "\"shared_with\": 3")); },
                         "\"shared_with\" must name the experiment file");
  std::ofstream(tmp.path / "chain.json") << peers_text;  // itself shares h with fair.json
  hkt::test::check_error(
      [&] { Experiment::from_file(with("\"shared_with\": \"fair.json\"", "\"shared_with\": \"chain.json\"")); },
      "shares runs of its own (one level only)");
}
