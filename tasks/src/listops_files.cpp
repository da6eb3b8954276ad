// ListOps's TSV files (hkt/tasks/listops.hpp), LRA's layout: a 'Source\tTarget' header, one
// expression and its value a line; every row is evaluated and checked when read or written.
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "hkt/core/error.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/listops.hpp"
#include "listops_detail.hpp"

namespace hkt::tasks {

namespace {

using detail::excerpt;

struct Row {
  std::string expr;
  int64_t target;
  int64_t line;
};

std::vector<Row> read_rows(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HKT_CHECK(fs::is_regular_file(path, ec), "listops: file '", path, "' not found (or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  HKT_CHECK(in.good(), "listops: cannot open '", path, "'");
  std::string line;
  int64_t lineno = 0;
  auto strip_cr = [](std::string& s) {
    if (!s.empty() && s.back() == '\r') s.pop_back();
  };
  HKT_CHECK(static_cast<bool>(std::getline(in, line)), path, ":1: empty file, expected the header 'Source\\tTarget'");
  ++lineno;
  strip_cr(line);
  if (line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // UTF-8 BOM
  HKT_CHECK(line == "Source\tTarget", path, ":1: bad header ", excerpt(line), ", expected 'Source\\tTarget'");
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    ++lineno;
    strip_cr(line);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank line
    const size_t tab = line.find('\t');
    HKT_CHECK(tab != std::string::npos, path, ":", lineno, ": no tab; expected 'expression\\ttarget', got ",
              excerpt(line));
    HKT_CHECK(line.find('\t', tab + 1) == std::string::npos, path, ":", lineno,
              ": more than one tab; expected 'expression\\ttarget'");
    std::string target = line.substr(tab + 1);
    while (!target.empty() && target.back() == ' ') target.pop_back();
    while (!target.empty() && target.front() == ' ') target.erase(0, 1);
    HKT_CHECK(target.size() == 1 && target[0] >= '0' && target[0] <= '9', path, ":", lineno, ": target '", target,
              "' is not a digit 0-9");
    Row r{line.substr(0, tab), target[0] - '0', lineno};
    int64_t v = 0;
    try {
      v = evaluate_listops(r.expr);
    } catch (const Error& e) {
      throw Error(str_cat(path, ":", lineno, ": ", e.what()));
    }
    HKT_CHECK(v == r.target, path, ":", lineno, ": target ", r.target, " but the expression evaluates to ", v);
    rows.push_back(std::move(r));
  }
  HKT_CHECK(!in.bad(), "listops: error reading '", path, "'");
  HKT_CHECK(!rows.empty(), path, ": no examples (only the header); an empty split is an error");
  return rows;
}

}  // namespace

void write_listops_tsv(const std::string& path, const std::vector<std::pair<std::string, int64_t>>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& [expr, target] = rows[i];
    HKT_CHECK(target >= 0 && target <= 9, "listops: writing '", path, "': row ", i, " has target ", target,
              ", expected 0-9");
    HKT_CHECK(expr.find_first_of("\t\r\n") == std::string::npos, "listops: writing '", path, "': row ", i,
              " has a tab or line break in its expression");
    int64_t v = 0;
    try {
      v = evaluate_listops(expr);
    } catch (const Error& e) {
      throw Error(str_cat("listops: writing '", path, "': row ", i, ": ", e.what()));
    }
    HKT_CHECK(v == target, "listops: writing '", path, "': row ", i, " has target ", target,
              " but its expression evaluates to ", v);
  }
  std::string text = "Source\tTarget\n";
  for (const auto& [expr, target] : rows) text += str_cat(expr, '\t', target, '\n');
  try {
    write_file_atomic(path, text);
  } catch (const Error& e) {
    throw Error(str_cat("listops: ", e.what()));
  }
}

std::vector<std::pair<std::string, int64_t>> read_listops_tsv(const std::string& path) {
  std::vector<Row> rows = read_rows(path);
  std::vector<std::pair<std::string, int64_t>> res;
  res.reserve(rows.size());
  for (Row& r : rows) res.emplace_back(std::move(r.expr), r.target);
  return res;
}

void write_listops_dir(const std::string& dir, const ListOpsSplitRows& rows) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  HKT_CHECK(!ec && fs::is_directory(dir), "listops: cannot create folder '", dir, "'", ec ? ": " + ec.message() : "");
  const fs::path d(dir);
  write_listops_tsv((d / "basic_train.tsv").string(), rows.train);
  write_listops_tsv((d / "basic_val.tsv").string(), rows.val);
  write_listops_tsv((d / "basic_test.tsv").string(), rows.test);
}

Splits load_listops_tsv(const std::string& dir, int64_t seq_len) {
  namespace fs = std::filesystem;
  HKT_CHECK(seq_len >= 1, "listops: seq_len must be >= 1, got ", seq_len);
  std::error_code ec;
  HKT_CHECK(fs::is_directory(dir, ec), "listops: folder '", dir,
            "' not found (expected basic_train.tsv, basic_val.tsv, basic_test.tsv from LRA)");
  Splits s{detail::listops_dataset("listops/train", seq_len), detail::listops_dataset("listops/val", seq_len),
           detail::listops_dataset("listops/test", seq_len), {}};
  const std::pair<const char*, Dataset*> files[] = {
      {"basic_train.tsv", &s.train}, {"basic_val.tsv", &s.val}, {"basic_test.tsv", &s.test}};
  for (const auto& [file, dst] : files) {
    const std::string path = (fs::path(dir) / file).string();
    const std::vector<Row> rows = read_rows(path);
    for (const Row& r : rows) {
      const std::vector<int64_t> ids = tokenize_listops(r.expr);
      HKT_CHECK(static_cast<int64_t>(ids.size()) <= seq_len, path, ":", r.line, ": expression has ", ids.size(),
                " tokens, more than seq_len = ", seq_len, " (ListOps examples are not truncated; use a larger seq_len)");
      dst->add_tokens(ids, r.target);
    }
    dst->validate();
  }
  return s;
}

}  // namespace hkt::tasks
