// The trainer and the task registry: learning, config JSON, checkpoints,
// exact resume, non-finite detection, best-checkpoint selection.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "helpers/temp_dir.hpp"
#include "helpers/check.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/registry.hpp"
#include "hkt/tasks/train.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::error_of;
using hkt::test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

TrainConfig small_config() {
  TrainConfig c;
  c.task = "synthetic";
  c.data.train_size = 256;
  c.data.val_size = 64;
  c.data.test_size = 64;
  c.data.seq_len = 16;
  c.model = "hkt-tiny";
  c.batch_size = 16;
  c.steps = 40;
  c.lr = 3e-3;
  c.log_every = 5;
  c.eval_every = 10;
  c.seed = 7;
  return c;
}

RunOptions quiet() {
  RunOptions o;
  o.quiet = true;
  return o;
}

std::vector<json> read_metrics(const std::string& run) {
  std::ifstream f(run + "/metrics.jsonl");
  std::vector<json> out;
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Same names, shapes, dtypes and bytes.
void check_same_tensors(const std::string& a, const std::string& b) {
  const SafetensorsFile fa = load_safetensors(a), fb = load_safetensors(b);
  REQUIRE(fa.tensors.size() == fb.tensors.size());
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    // Not structured bindings: INFO's lambda cannot capture one in clang 14.
    const auto &na = fa.tensors[i].first, &nb = fb.tensors[i].first;
    const auto &ta = fa.tensors[i].second, &tb = fb.tensors[i].second;
    INFO(na);
    REQUIRE(na == nb);
    REQUIRE(ta.shape() == tb.shape());
    REQUIRE(ta.dtype() == tb.dtype());
    CHECK(serialize_safetensors({{na, ta}}) == serialize_safetensors({{nb, tb}}));
  }
}


}  // namespace

TaskOptions synth_opts() {
  TaskOptions o;
  o.seq_len = 12;
  o.train_size = 50;
  o.val_size = 10;
  o.test_size = 20;
  o.seed = 3;
  return o;
}

TEST_CASE("registry: synthetic task, dimensions, unknown names") {
  const Splits s = load_task("synthetic", synth_opts());
  CHECK(s.train.size() == 50);
  CHECK(s.val.size() == 10);
  CHECK(s.test.size() == 20);
  CHECK(s.train.seq_len == 12);
  // Deterministic, and the label is the majority token.
  const Splits s2 = load_task("synthetic", synth_opts());
  CHECK(s.train.tokens == s2.train.tokens);
  for (int64_t i = 0; i < s.train.size(); ++i) {
    int64_t count[4] = {};
    for (int64_t t = 0; t < s.train.lengths[i]; ++t) ++count[s.train.tokens[i * 12 + t] - 1];
    for (int c = 0; c < 4; ++c) CHECK(count[c] <= count[s.train.labels[i]]);
  }
  nn::ClassifierConfig mc = nn::ClassifierConfig::preset("mha-tiny");
  fill_model_config(mc, s.train);
  CHECK(mc.vocab == 5);
  CHECK(mc.classes == 4);
  CHECK(mc.max_len == 12);
  const std::string e = error_of([] { load_task("nope", TaskOptions()); });
  CHECK(e.find("unknown task 'nope'") != std::string::npos);
  CHECK(e.find("listops") != std::string::npos);
  // Generated ListOps, small.
  TaskOptions lopt;
  lopt.seq_len = 64;
  lopt.train_size = 20;
  lopt.val_size = lopt.test_size = 5;
  lopt.seed = 1;
  const Splits lo = load_task("listops", lopt);
  CHECK(lo.train.size() == 20);
  CHECK(lo.train.classes == 10);
  CHECK(lo.train.seq_len == 64);
  // listops-tsv (LRA's files) takes --train-size and --test-size as seeded subsets.
  TempDir dir("tasks");
  write_listops_dir(dir.str("listops"), generate_listops([] {
                      ListOpsOptions o;
                      o.seq_len = 64;
                      o.train_size = 40;
                      o.val_size = o.test_size = 10;
                      return o;
                    }()));
  TaskOptions topt;
  topt.data_dir = dir.str("");
  topt.seq_len = 64;
  CHECK(load_task("listops-tsv", topt).train.size() == 40);
  topt.train_size = 12;
  topt.test_size = 4;
  const Splits tsv = load_task("listops-tsv", topt);
  CHECK(tsv.train.size() == 12);
  CHECK(tsv.val.size() == 10);
  CHECK(tsv.test.size() == 4);
  // A missing data folder is an error naming it and the command that fetches the data there.
  TaskOptions missing;
  missing.data_dir = "/nonexistent/hkt-data";
  CHECK_THROWS_AS(load_task("imdb", missing), Error);
  for (const char* task : {"imdb", "cifar10", "cifar10-rgb", "fashion-mnist", "listops-tsv"}) {
    const std::string set = std::string(task) == "cifar10-rgb" ? "cifar10" : task;
    const std::string m = error_of([&] { load_task(task, missing); });
    CHECK_MESSAGE(m.find(std::string("no ") + task + " data in '/nonexistent/hkt-data'") != std::string::npos, m);
    CHECK_MESSAGE(m.find("`HKT_DATA=/nonexistent/hkt-data tools/hkt-data " + set + "`") != std::string::npos, m);
  }
}

TEST_CASE("TrainConfig: JSON round trip and strict errors") {
  TrainConfig c = small_config();
  c.model.edit().attention.edit<nn::HKTOptions>().levels = 2;
  c.model.edit().dropout = 0.25;
  c.schedule = "linear";
  c.run_dir = "runs/x";
  c.data.seed = 123456789012345ull;
  const TrainConfig back = TrainConfig::from_json(c.to_json());
  CHECK(back == c);
  CHECK(back.model_config(load_task("synthetic", c.data).train).attention.get<nn::HKTOptions>().levels == 2);
  // Missing keys keep their defaults.
  CHECK(TrainConfig::from_json(R"({"steps": 5})").model == TrainConfig().model);

  auto err = [](const std::string& text) { return error_of([&] { TrainConfig::from_json(text); }); };
  CHECK(err(R"({"steps": 5, "stepz": 3})").find("unknown key 'stepz'") != std::string::npos);
  CHECK(err(R"({"steps": 5, "data": {"sizes": 3}})").find("unknown key 'data.sizes'") != std::string::npos);
  CHECK(err(R"({"steps": 5, "model_overrides": {"levelz": 3}})").find("levelz") != std::string::npos);
  CHECK(err(R"({"steps": "5"})").find("'steps' must be an integer") != std::string::npos);
  CHECK(err(R"({"steps": 5, "lr": "big"})").find("'lr' must be a number") != std::string::npos);
  CHECK(err(R"({"steps": 5, "schedule": "exp"})").find("schedule") != std::string::npos);
  CHECK(err(R"({"steps": 5, "model": "huge"})").find("huge") != std::string::npos);
  CHECK(err(R"({"steps": 5, "task": "nope"})").find("unknown task 'nope' (known: synthetic, listops,") !=
        std::string::npos);
  CHECK(err(R"({"steps": 0})").find("steps") != std::string::npos);
  CHECK(err(R"({"steps": 5, "model_overrides": {"levels": "two"}})").find("levels") != std::string::npos);
  CHECK(err("[1, 2]").find("must be a JSON object") != std::string::npos);
  CHECK(err("{").find("invalid JSON") != std::string::npos);
}

TEST_CASE("train: the loss falls and the run folder is complete") {
  TempDir tmp("trainer_learn");
  TrainConfig c = small_config();
  c.steps = 60;
  c.run_dir = tmp.str("run");
  const TrainResult r = train(c, quiet());
  CHECK(r.completed);
  CHECK(r.steps == 60);
  const std::vector<json> m = read_metrics(c.run_dir);
  std::vector<double> losses;
  for (const auto& e : m)
    if (e["event"] == "train") losses.push_back(e["loss"].get<double>());
  REQUIRE(losses.size() == 12);
  CHECK(losses.back() < 0.7 * losses.front());
  CHECK(r.best_val_acc > 0.5);  // 4 classes: chance is about 0.25-0.4
  for (const char* f : {"config.json", "metrics.jsonl", "summary.json", "best.safetensors",
                        "checkpoint/model.safetensors", "checkpoint/optimizer.safetensors"})
    CHECK_MESSAGE(fs::exists(tmp.path / "run" / f), f);
  const json s = json::parse(file_bytes(c.run_dir + "/summary.json"));
  CHECK(s["steps"] == 60);
  CHECK(s["params"].get<int64_t>() == r.params);
  CHECK(s["test_acc"].get<double>() == r.test_acc);
  CHECK(s["config"]["model"] == "hkt-tiny");
  CHECK(s["s_per_step"].get<double>() > 0);
  CHECK(s["threads"].get<int>() == get_num_threads());
  CHECK(s["blas_threads"].get<int>() == get_blas_num_threads());
  CHECK(s["blas_threads"].get<int>() >= 1);
  CHECK(s["blas_core"].get<std::string>() == get_blas_core());
  CHECK(!get_blas_core().empty());
  CHECK(s["sgemm"].get<std::string>() == get_sgemm_backend());
  // The advice names an AVX2 kernel set only.
  if (!blas_core_advice().empty()) CHECK((get_blas_core() == "Haswell" || get_blas_core() == "Zen"));
  CHECK(TrainConfig::from_json(file_bytes(c.run_dir + "/config.json")) == c);
}

TEST_CASE("train: settings refused by the set-up leave an earlier run's folder as it was") {
  TempDir tmp("trainer_keep");
  TrainConfig c = small_config();
  c.steps = 10;
  c.run_dir = tmp.str("run");
  (void)train(c, quiet());
  // Every file of the finished run, with its bytes.
  std::map<std::string, std::string> before;
  for (const auto& e : fs::recursive_directory_iterator(c.run_dir))
    if (e.is_regular_file()) before[e.path().string()] = file_bytes(e.path().string());
  REQUIRE(before.count(c.run_dir + "/summary.json"));
  REQUIRE(before.count(c.run_dir + "/checkpoint/model.safetensors"));
  TrainConfig warm = c;  // passes validate(); the step count is known only after loading the data
  warm.steps = 0;
  warm.epochs = 1;
  warm.warmup = 1000;
  TrainConfig nodata = c;  // a file task whose folder does not exist
  nodata.task = "imdb";
  nodata.data.data_dir = tmp.str("no-such-data");
  RunOptions replace = quiet();  // even when the old run may be replaced
  replace.overwrite = true;
  for (const TrainConfig& bad : {warm, nodata}) {
    CHECK_THROWS_AS((void)train(bad, replace), InputError);
    std::map<std::string, std::string> after;
    for (const auto& e : fs::recursive_directory_iterator(c.run_dir))
      if (e.is_regular_file()) after[e.path().string()] = file_bytes(e.path().string());
    CHECK(after == before);
  }
  // A fresh folder is not created for settings that are refused.
  TrainConfig fresh = warm;
  fresh.run_dir = tmp.str("fresh");
  CHECK_THROWS_AS((void)train(fresh, quiet()), InputError);
  CHECK(!fs::exists(fresh.run_dir));
}

TEST_CASE("train: checkpoint round trip") {
  TempDir tmp("trainer_ckpt");
  TrainConfig c = small_config();
  c.steps = 20;
  c.run_dir = tmp.str("run");
  const TrainResult r = train(c, quiet());
  const Splits data = load_task(c.task, c.data);
  const nn::ClassifierConfig mc = c.model_config(data.train);
  // The final checkpoint restores a model that evaluates exactly as the run did at the end.
  nn::SequenceClassifier m(mc);
  nn::AdamW opt(nn::decay_groups(m, c.lr, c.weight_decay, nn::DecayRule::Weights));  // the trainer's default rule
  const nn::Metadata md = nn::load_checkpoint(c.run_dir + "/checkpoint", m, opt);
  CHECK(md.at("hkt.step") == "20");
  CHECK(md.at("hkt.train.epoch") == "1");  // 16 batches per epoch: step 20 is epoch 1, batch 4
  CHECK(md.at("hkt.train.batch_in_epoch") == "4");
  CHECK(md.at("hkt.train.best_step") == std::to_string(r.best_step));
  CHECK(opt.steps() == 20);
  CHECK(evaluate(m, data.val, 16).accuracy == r.final_val_acc);
  // The best model's file evaluates to the reported test accuracy.
  nn::SequenceClassifier best(mc);
  const nn::Metadata bm = nn::load_model(c.run_dir + "/best.safetensors", best);
  CHECK(bm.at("hkt.step") == std::to_string(r.best_step));
  CHECK(evaluate(best, data.test, 16).accuracy == r.test_acc);
}

TEST_CASE("resume after an interruption ends with the same weights bit for bit") {
  TempDir tmp("trainer_resume");
  TrainConfig c = small_config();
  c.steps = 30;
  c.checkpoint_every = 5;
  c.warmup = 4;
  c.model.edit().dropout = 0.1;  // so that the dropout generator must be restored too
  c.run_dir = tmp.str("full");
  const TrainResult full = train(c, quiet());
  REQUIRE(full.completed);

  SUBCASE("stop between checkpoints") {
    TrainConfig b = c;
    b.run_dir = tmp.str("cut");
    RunOptions stop = quiet();
    stop.stop_after = 13;  // checkpoint at 10; steps 11-13 are lost and redone
    const TrainResult part = train(b, stop);
    CHECK_FALSE(part.completed);
    CHECK(part.steps == 13);
    const TrainResult rest = resume(b.run_dir, quiet());
    CHECK(rest.completed);
    CHECK(rest.best_step == full.best_step);
    CHECK(rest.test_acc == full.test_acc);
    check_same_tensors(c.run_dir + "/checkpoint/model.safetensors", b.run_dir + "/checkpoint/model.safetensors");
    check_same_tensors(c.run_dir + "/checkpoint/optimizer.safetensors",
                       b.run_dir + "/checkpoint/optimizer.safetensors");
    // No timestamps or paths in the metadata: the files are identical.
    CHECK(file_bytes(c.run_dir + "/checkpoint/model.safetensors") ==
          file_bytes(b.run_dir + "/checkpoint/model.safetensors"));
    CHECK(file_bytes(c.run_dir + "/best.safetensors") == file_bytes(b.run_dir + "/best.safetensors"));
    // The metrics of the redone steps are not duplicated.
    int evals = 0;
    for (const auto& e : read_metrics(b.run_dir)) evals += e["event"] == "eval";
    CHECK(evals == 3);
  }
  SUBCASE("stop before the first checkpoint: resume starts over") {
    TrainConfig b = c;
    b.run_dir = tmp.str("early");
    RunOptions stop = quiet();
    stop.stop_after = 3;
    train(b, stop);
    CHECK_FALSE(fs::exists(tmp.path / "early" / "checkpoint"));
    resume(b.run_dir, quiet());
    CHECK(file_bytes(c.run_dir + "/checkpoint/model.safetensors") ==
          file_bytes(b.run_dir + "/checkpoint/model.safetensors"));
  }
  SUBCASE("killed between the renames of a checkpoint save") {
    TrainConfig b = c;
    b.run_dir = tmp.str("renames");
    RunOptions stop = quiet();
    stop.stop_after = 17;
    train(b, stop);
    // What a kill after "checkpoint -> checkpoint.old" and before "checkpoint.tmp -> checkpoint" leaves.
    fs::rename(tmp.path / "renames" / "checkpoint", tmp.path / "renames" / "checkpoint.old");
    fs::create_directories(tmp.path / "renames" / "checkpoint.tmp");
    std::ofstream(tmp.path / "renames" / "checkpoint.tmp" / "optimizer.safetensors") << "half";
    resume(b.run_dir, quiet());
    CHECK(file_bytes(c.run_dir + "/checkpoint/model.safetensors") ==
          file_bytes(b.run_dir + "/checkpoint/model.safetensors"));
    CHECK_FALSE(fs::exists(tmp.path / "renames" / "checkpoint.tmp"));
    CHECK_FALSE(fs::exists(tmp.path / "renames" / "checkpoint.old"));
  }
}

TEST_CASE("a non-finite loss or gradient stops the run, naming the step, and keeps the last checkpoint") {
  TempDir tmp("trainer_nan");
  TrainConfig c = small_config();
  c.lr = 1e30;
  c.clip_norm = 0;
  c.checkpoint_every = 1;
  c.steps = 50;
  c.run_dir = tmp.str("run");
  const std::string e = error_of([&] { train(c, quiet()); });
  INFO(e);
  REQUIRE(!e.empty());
  CHECK(e.find("train: step ") == 0);
  CHECK(e.find("not finite") != std::string::npos);
  // It names the cause: the largest weight, or the first non-finite gradient; not a guess.
  CHECK((e.find("the weights are finite (the largest, in '") != std::string::npos ||
         e.find("the first non-finite gradient is that of '") != std::string::npos));
  CHECK(e.find("', is kept") != std::string::npos);
  const int64_t failed = std::stoll(e.substr(std::string("train: step ").size()));
  CHECK(failed >= 2);
  // The last good checkpoint (step failed - 1) loads.
  const Splits data = load_task(c.task, c.data);
  nn::SequenceClassifier m(c.model_config(data.train));
  nn::AdamW opt(nn::decay_groups(m, 1e-3, 0.0, nn::DecayRule::Weights));
  const nn::Metadata md = nn::load_checkpoint(c.run_dir + "/checkpoint", m, opt);
  CHECK(std::stoll(md.at("hkt.step")) == failed - 1);
  CHECK_FALSE(fs::exists(tmp.path / "run" / "summary.json"));
  // The error is in the metrics too.
  CHECK(read_metrics(c.run_dir).back()["event"] == "error");
}

TEST_CASE("the best checkpoint is chosen by validation accuracy") {
  TempDir tmp("trainer_best");
  TrainConfig c = small_config();
  c.steps = 40;
  c.eval_every = 5;
  c.lr = 1e-2;
  c.data.val_size = 16;  // small sets: validation and test accuracies disagree often
  c.data.test_size = 16;
  c.run_dir = tmp.str("run");
  const TrainResult r = train(c, quiet());
  double best_val = -1;
  int64_t best_step = -1;
  for (const auto& e : read_metrics(c.run_dir)) {
    if (e["event"] != "eval") continue;
    if (e["val_acc"].get<double>() > best_val) {
      best_val = e["val_acc"].get<double>();
      best_step = e["step"].get<int64_t>();
    }
  }
  CHECK(r.best_step == best_step);
  CHECK(r.best_val_acc == best_val);
  const json s = json::parse(file_bytes(c.run_dir + "/summary.json"));
  CHECK(s["best_step"] == best_step);
  // The reported test accuracy is the best (by validation) model's, on the whole test set.
  const Splits data = load_task(c.task, c.data);
  nn::SequenceClassifier best(c.model_config(data.train));
  CHECK(nn::load_model(c.run_dir + "/best.safetensors", best).at("hkt.step") == std::to_string(best_step));
  CHECK(evaluate(best, data.test, 16).accuracy == r.test_acc);
}

TEST_CASE("evaluate with max_batches samples the whole set, not its first batches") {
  // 400 examples stored by class (200 of class 1, then 200 of class 0), as IMDB's
  // reader stores them, and a model that always answers class 0.
  Dataset d;
  d.name = "sorted";
  d.seq_len = 8;
  d.vocab = 5;
  d.classes = 2;
  d.pad_id = 0;
  for (int i = 0; i < 400; ++i) d.add_tokens({1, 2, 3, 4}, i < 200 ? 1 : 0);
  nn::ClassifierConfig mc = nn::ClassifierConfig::preset("mha-tiny");
  mc.vocab = 5;
  mc.classes = 2;
  mc.max_len = 8;
  nn::SequenceClassifier model(mc);
  {
    NoGradGuard ng;
    for (auto& [name, p] : model.named_parameters())
      if (name == "head.weight") copy_(p, zeros_like(p));
      else if (name == "head.bias") copy_(p, from_vector(std::vector<float>{5.0f, -5.0f}, {2}));
  }
  const EvalResult all = evaluate(model, d, 16);  // every example
  CHECK(all.accuracy == 0.5);
  // Confusion matrix, rows = label: every example is predicted class 0.
  CHECK(all.classes == 2);
  CHECK(all.confusion == std::vector<int64_t>{200, 0, 200, 0});
  const EvalResult part = evaluate(model, d, 16, 4);
  CHECK(part.examples == 64);
  // The first 4 batches are all class 1 (accuracy 0); a spread sample has both classes.
  CHECK(part.accuracy > 0.25);
  CHECK(part.accuracy < 0.75);
  // The same examples at every call.
  CHECK(evaluate(model, d, 16, 4).accuracy == part.accuracy);
  CHECK(evaluate(model, d, 16, 4).loss == part.loss);
  // More batches than the set holds: every example.
  CHECK(evaluate(model, d, 16, 100).examples == 400);
  // The confusion matrix of a sample counts the sample's examples.
  int64_t counted = 0;
  for (int64_t v : part.confusion) counted += v;
  CHECK(counted == 64);
  // A model with another number of classes than the data is refused, by name.
  Dataset d3 = d;
  d3.name = "three";
  d3.classes = 3;
  test::check_error([&] { (void)evaluate(model, d3, 16); }, "the model has 2 classes but three has 3");
}

TEST_CASE("the run folder holds the data's length distribution and the best model's test predictions") {
  TempDir tmp("trainer_predictions");
  TrainConfig c = small_config();
  c.run_dir = (tmp.path / "run").string();
  const TrainResult r = train(c, quiet());
  // data.json: every split's size and length distribution.
  std::ifstream dj(tmp.path / "run" / "data.json");
  REQUIRE(dj.good());
  const nlohmann::json d = nlohmann::json::parse(dj);
  CHECK(d["task"] == "synthetic");
  CHECK(d["seq_len"] == 16);
  const Splits data = load_task(c.task, c.data);
  for (const auto& [key, set] : {std::pair<const char*, const Dataset*>{"train", &data.train},
                                 {"val", &data.val}, {"test", &data.test}}) {
    CAPTURE(key);
    CHECK(d[key]["examples"] == set->size());
    const LengthStats st = length_stats(*set, 16);
    CHECK(d[key]["median"] == st.median);
    CHECK(d[key]["min"] == st.min);
    CHECK(d[key]["max"] == st.max);
    int64_t n = 0;
    for (const auto& h : d[key]["histogram"]) n += h["count"].get<int64_t>();
    CHECK(n == set->size());
  }
  // test_predictions.csv: one line per test example, in order, whose correct
  // share is the reported test accuracy of the best model.
  std::ifstream pf(tmp.path / "run" / kTestPredictionsFile);
  REQUIRE(pf.good());
  std::string line;
  std::getline(pf, line);
  CHECK(line == "index,label,predicted");
  int64_t rows = 0, correct = 0;
  while (std::getline(pf, line)) {
    int64_t idx = -1, label = -1, pred = -1;
    REQUIRE(std::sscanf(line.c_str(), "%lld,%lld,%lld", reinterpret_cast<long long*>(&idx),
                        reinterpret_cast<long long*>(&label), reinterpret_cast<long long*>(&pred)) == 3);
    CHECK(idx == rows);
    CHECK(label == data.test.labels[static_cast<size_t>(idx)]);
    CHECK((pred >= 0 && pred < data.test.classes));
    correct += pred == label;
    ++rows;
  }
  CHECK(rows == data.test.size());
  CHECK(static_cast<double>(correct) / static_cast<double>(rows) == doctest::Approx(r.test_acc).epsilon(1e-12));
}

TEST_CASE("the decay rule: weights (default) spares the positional table and theta; matrices decays them") {
  TrainConfig c = small_config();
  CHECK(c.decay == "weights");
  const Splits data = load_task(c.task, c.data);
  nn::SequenceClassifier m(c.model_config(data.train));
  const auto names_in = [&](const std::vector<nn::ParamGroup>& groups, const std::string& group) {
    std::vector<std::string> out;
    for (const auto& g : groups)
      if (g.name == group)
        for (const Tensor& p : g.params)
          for (const auto& [n, t] : m.named_parameters())
            if (t.is_same(p)) out.push_back(n);
    return out;
  };
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  const auto w = nn::decay_groups(m, 1e-3, 0.1, nn::DecayRule::Weights);
  const auto x = nn::decay_groups(m, 1e-3, 0.1, nn::DecayRule::Matrices);
  CHECK(has(names_in(w, "no_decay"), "pos"));
  CHECK(has(names_in(w, "no_decay"), "blocks.0.attn.theta"));
  CHECK(has(names_in(w, "decay"), "embed.weight"));
  CHECK(has(names_in(w, "decay"), "head.weight"));
  CHECK(has(names_in(x, "decay"), "pos"));
  CHECK(has(names_in(x, "decay"), "blocks.0.attn.theta"));
  CHECK(names_in(w, "decay").size() + 2 == names_in(x, "decay").size());
  // The config's field round-trips and is checked.
  c.decay = "matrices";
  CHECK(TrainConfig::from_json(c.to_json()).decay == "matrices");
  c.decay = "all";
  hkt::test::check_error([&] { c.validate(); }, "decay must be \"weights\" or \"matrices\"");
}

TEST_CASE("progress: the library's long loops report through the installed sink, not before a second") {
  CHECK(progress_line("listops: generating", 41280, 96000, 0) == "listops: generating 41,280 of 96,000 (43%)");
  CHECK(progress_line("scoring x", 25, 100, 3.0) == "scoring x 25 of 100 (25%), about 9 s left");
  CHECK(progress_line("scoring x", 1, 100, 60.0) == "scoring x 1 of 100 (1%), about 99 min left");
  std::vector<std::pair<std::string, bool>> seen;
  {
    Progress silent("nobody listens", 10);
    silent.set(5);  // no sink: nothing, no crash
  }
  {
    const ProgressSink sink([&](const std::string& s, bool done) { seen.emplace_back(s, done); });
    {
      Progress p("work", 100);
      p.set(10);  // within the first second: silent
      CHECK(seen.empty());
      std::this_thread::sleep_for(std::chrono::milliseconds(1100));
      p.set(50);
      REQUIRE(seen.size() == 1);
      CHECK(seen[0].first.rfind("work 50 of 100 (50%), about ", 0) == 0);
      CHECK_FALSE(seen[0].second);
      p.set(60);  // within 0.2 s of the last line: silent
      CHECK(seen.size() == 1);
    }
    REQUIRE(seen.size() == 2);  // the end, since a line was shown
    CHECK(seen[1] == std::make_pair(std::string("work 100 of 100 (100%)"), true));
  }
  Progress after("sink gone", 10);  // the sink's scope ended: the previous (none) is back
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  after.set(5);
  CHECK(seen.size() == 2);
}
