// Experiment files that refer to each other ("tuning" and "shared_with"): one
// graph, cycles refused with exit-2 errors that name the cycle (no endless
// recursion, issue 70), and run folders unique after normalisation.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/tasks/experiment.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::error_of;
using hkt::test::TempDir;
namespace fs = std::filesystem;

namespace {

// An experiment file NAME.json in `dir`: one task, models m0..m<n-1> (hkt-tiny), each
// optionally "shared_with" a file; optionally a "tuning" file.
std::string write_exp(const fs::path& dir, const std::string& name, const std::vector<std::string>& shared,
                      const std::string& tuning) {
  std::string models;
  for (size_t i = 0; i < shared.size(); ++i) {
    models += (i ? ", " : "") + std::string("\"m") + std::to_string(i) + "\": {\"model\": \"hkt-tiny\"" +
              (shared[i].empty() ? "" : ", \"shared_with\": \"" + shared[i] + "\"") + "}";
  }
  std::ofstream(dir / (name + ".json"))
      << "{\"name\": \"" << name << "\", \"out_dir\": \"" << (dir / ("out-" + name)).string()
      << "\", \"tasks\": {\"synthetic\": {}}, \"models\": {" << models << "}, \"base\": {\"steps\": 4}, \"seeds\": [1]"
      << (tuning.empty() ? "" : ", \"tuning\": {\"experiment\": \"" + tuning + "\"}") << "}";
  return (dir / (name + ".json")).string();
}


}  // namespace

TEST_CASE("experiment files: a cycle of tuning and shared_with references is refused, naming it") {
  TempDir t("expgraph");
  // The issue's case: a.json takes its tuning from b.json, whose model is shared with a.json.
  const std::string a = write_exp(t.path, "a", {""}, "b.json");
  write_exp(t.path, "b", {"a.json"}, "");
  hkt::test::check_error([&] { Experiment::from_file(a); }, "refer to each other in a cycle: ");
  const std::string msg = error_of([&] { Experiment::from_file(a); });
  CHECK(msg.find("a.json -> (\"tuning\") ") != std::string::npos);
  CHECK(msg.find("b.json -> (model \"m0\"'s \"shared_with\") ") != std::string::npos);
  // A file sharing with itself; a three-file cycle through shared_with only.
  const std::string self = write_exp(t.path, "self", {"self.json"}, "");
  hkt::test::check_error([&] { Experiment::from_file(self); }, "in a cycle: ");
  write_exp(t.path, "c1", {"c2.json"}, "");
  write_exp(t.path, "c2", {"c3.json"}, "");
  const std::string c3 = write_exp(t.path, "c3", {"c1.json"}, "");
  hkt::test::check_error([&] { Experiment::from_file(c3); }, "in a cycle: ");
  // From text (no file of its own): the cycle among the files it names is found too.
  std::string text;
  {
    std::ifstream f(a);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  hkt::test::check_error([&] { Experiment::from_json(text, "", t.path.string()); }, "in a cycle: ");
  // A diamond (two paths to one file) is not a cycle.
  write_exp(t.path, "leaf", {""}, "");
  const std::string top = write_exp(t.path, "top", {"leaf.json", ""}, "leaf.json");
  CHECK(error_of([&] { Experiment::from_file(top); }).find("cycle") == std::string::npos);
}

TEST_CASE("experiment files: model or task keys that name one run folder are refused, naming both") {
  TempDir t("expgraph");
  std::ofstream(t / "k.json") << R"({"name": "k", "out_dir": ")" << (t / "o").string()
                              << R"(", "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-tiny"},
      "hkt/": {"model": "mha-tiny"}}, "base": {"steps": 4}, "seeds": [1]})";
  hkt::test::check_error([&] { Experiment::from_file((t / "k.json").string()); },
                         "(model keys \"hkt\" and \"hkt/\") would share the run folder");
  std::ofstream(t / "k2.json") << R"({"name": "k", "out_dir": ")" << (t / "o").string()
                               << R"(", "tasks": {"synthetic": {}, "synthetic//": {"task": "synthetic"}},
      "models": {"hkt": {"model": "hkt-tiny"}}, "base": {"steps": 4}, "seeds": [1]})";
  hkt::test::check_error([&] { Experiment::from_file((t / "k2.json").string()); },
                         "(task keys \"synthetic\" and \"synthetic//\")");
  std::ofstream(t / "k3.json") << R"({"name": "k", "out_dir": ")" << (t / "o").string()
                               << R"(", "tasks": {"synthetic": {}}, "models": {"..": {"model": "hkt-tiny"}, "/abs": {"model": "hkt-tiny"}},
      "base": {"steps": 4}, "seeds": [1]})";
  hkt::test::check_error([&] { Experiment::from_file((t / "k3.json").string()); },
                         "the model key \"..\" cannot name a run folder");
}

TEST_CASE("experiment files, property: random tuning / shared_with graphs are read or refused, cycles always named") {
  std::mt19937 rng(70);
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    TempDir t("expgraph");
    const int n = 2 + static_cast<int>(rng() % 5);
    std::vector<std::vector<int>> edges(n);
    for (int f = 0; f < n; ++f) {
      std::vector<std::string> shared;
      const int models = 1 + static_cast<int>(rng() % 3);
      for (int m = 0; m < models; ++m) {
        if (rng() % 3 == 0) {
          const int to = static_cast<int>(rng() % n);
          edges[f].push_back(to);
          shared.push_back("f" + std::to_string(to) + ".json");
        } else {
          shared.push_back("");
        }
      }
      std::string tuning;
      if (rng() % 3 == 0) {
        const int to = static_cast<int>(rng() % n);
        edges[f].push_back(to);
        tuning = "f" + std::to_string(to) + ".json";
      }
      write_exp(t.path, "f" + std::to_string(f), shared, tuning);
    }
    // Is a cycle reachable from f0?
    std::vector<int> state(n, 0);
    std::function<bool(int)> cyc = [&](int v) {
      state[v] = 1;
      for (int w : edges[v])
        if (state[w] == 1 || (state[w] == 0 && cyc(w))) return true;
      state[v] = 2;
      return false;
    };
    const bool has_cycle = cyc(0);
    std::string msg;
    try {
      Experiment::from_file((t / "f0.json").string());
    } catch (const Error& e) {
      msg = e.what();
    }  // anything else (a crash, another exception) fails the test
    CAPTURE(msg);
    CHECK((msg.find("in a cycle: ") != std::string::npos) == has_cycle);
  }
}
