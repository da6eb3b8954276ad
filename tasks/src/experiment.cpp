// Experiment files (hkt/tasks/experiment.hpp): reading one into its runs. The tuning and
// shared runs it resolves are in experiment_tuning.hpp, the results tables in
// experiment_results.cpp.
#include "hkt/tasks/experiment.hpp"

#include "experiment_graph.hpp"
#include "experiment_tuning.hpp"

#include <algorithm>
#include <filesystem>
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
#include "hkt/tasks/train.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using detail::at_path;
using detail::first_difference;
using detail::set_path;
using detail::SharedRuns;
using detail::Tuned;
using detail::Tuning;

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

}  // namespace hkt::tasks
