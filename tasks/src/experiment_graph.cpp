#include "experiment_graph.hpp"

#include <filesystem>
#include <map>
#include <vector>

#include "hkt/core/error.hpp"
#include "hkt/core/json_read.hpp"
#include "hkt/tasks/files.hpp"

namespace hkt::tasks::detail {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

thread_local int g_depth = 0;

struct Edge {
  std::string label;  // "\"tuning\"" or "model \"m\"'s \"shared_with\""
  fs::path file;
};

// The references of one experiment file, resolved against `base`.
std::vector<Edge> references(const json& j, const fs::path& base) {
  std::vector<Edge> out;
  if (!j.is_object()) return out;
  const auto resolve = [&](const std::string& s) {
    fs::path p = s;
    if (p.is_relative() && !base.empty()) p = base / p;
    return p;
  };
  if (j.contains("tuning") && j.at("tuning").is_object() && j.at("tuning").contains("experiment") &&
      j.at("tuning").at("experiment").is_string())
    out.push_back({"\"tuning\"", resolve(j.at("tuning").at("experiment").get<std::string>())});
  if (j.contains("models") && j.at("models").is_object())
    for (const auto& m : j.at("models").items())
      if (m.value().is_object() && m.value().contains("shared_with") && m.value().at("shared_with").is_string())
        out.push_back({str_cat("model \"", m.key(), "\"'s \"shared_with\""),
                       resolve(m.value().at("shared_with").get<std::string>())});
  return out;
}

// One name per file, whatever path led to it.
std::string identity(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p.lexically_normal() : c).string();
}

struct Walk {
  std::map<std::string, int> state;  // 1: on the current chain, 2: done
  std::vector<std::pair<std::string, std::string>> chain;  // (file shown, label of the edge leaving it)
  int files = 0;

  void visit(const json& j, const std::string& id, const std::string& shown, const fs::path& base) {
    HKT_CHECK(++files <= kMaxExperimentFiles, "experiment: the files it refers to (\"tuning\", \"shared_with\") "
              "reach more than ", kMaxExperimentFiles, " files");
    HKT_CHECK(static_cast<int>(chain.size()) < kMaxReferenceDepth, "experiment: a chain of references (\"tuning\", "
              "\"shared_with\") more than ", kMaxReferenceDepth, " files long, from ", chain.front().first);
    state[id] = 1;
    for (const Edge& e : references(j, base)) {
      const std::string to = identity(e.file);
      chain.emplace_back(shown, e.label);
      const auto s = state.find(to);
      if (s != state.end() && s->second == 1) {
        std::string cyc;
        bool on = false;
        for (const auto& [f, label] : chain) {
          on = on || identity(f) == to;
          if (on) cyc += f + " -> (" + label + ") ";
        }
        cyc += e.file.string();
        throw Error(str_cat("experiment: the files refer to each other in a cycle: ", cyc,
                            "; a file may use runs of another, not its own"));
      }
      if (s == state.end()) {
        json other;
        try {  // regular files only (a FIFO or device is the reader's to refuse), at most the JSON limit
          std::error_code ec;
          HKT_CHECK(fs::is_regular_file(e.file, ec), "not a regular file");
          const std::string text = read_text_file(e.file, size_t{64} << 20);
          check_json_text(text, e.file.string());
          other = json::parse(text);
        } catch (const std::exception&) {
          other = json();  // unreadable: the experiment's own reader names the file
        }
        visit(other, to, e.file.string(), e.file.parent_path());
      }
      chain.pop_back();
    }
    state[id] = 2;
  }
};

}  // namespace

void check_reference_graph(const json& root, const std::string& root_file, const std::string& base_dir) {
  Walk w;
  const std::string shown = root_file.empty() ? std::string("(this experiment)") : root_file;
  const std::string id = root_file.empty() ? std::string("\n(root)") : identity(root_file);
  w.visit(root, id, shown, base_dir);
}

ExperimentDepth::ExperimentDepth() : level_(++g_depth) {
  if (level_ > kMaxReferenceDepth) {
    --g_depth;
    throw Error(str_cat("experiment: files that refer to files (\"tuning\", \"shared_with\") more than ",
                        kMaxReferenceDepth, " levels deep"));
  }
}
ExperimentDepth::~ExperimentDepth() { --g_depth; }

}  // namespace hkt::tasks::detail
