// A user's own labelled text files (see hkt/tasks/text_data.hpp).
#include "hkt/tasks/text_data.hpp"

#include <csv.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hkt/core/error.hpp"

namespace hkt::tasks {
namespace {

// libcsv's callbacks collect the rows and the line each starts on.
struct Collector {
  std::vector<std::string> fields;
  std::vector<std::pair<int64_t, std::vector<std::string>>> rows;
  int64_t line = 1, row_start = 1;
  int64_t max_rows = 0;
};

void on_field(void* s, size_t len, void* data) {
  auto* c = static_cast<Collector*>(data);
  c->fields.emplace_back(s ? static_cast<const char*>(s) : "", s ? len : 0);
}

void on_row(int, void* data) {
  auto* c = static_cast<Collector*>(data);
  c->rows.emplace_back(c->row_start, std::move(c->fields));
  c->fields.clear();
  c->row_start = c->line + 1;  // the row ended on this line (its terminator is here)
}

int no_space(unsigned char) { return 0; }  // RFC 4180: spaces belong to the field

// Parses the stream line by line, so that an error names its line.
std::vector<std::pair<int64_t, std::vector<std::string>>> parse_rows(std::istream& in, const std::string& name,
                                                                    char delimiter, int64_t max_rows) {
  csv_parser p;
  HKT_CHECK(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) == 0, name, ": cannot start the CSV parser");
  csv_set_delim(&p, static_cast<unsigned char>(delimiter));
  csv_set_space_func(&p, no_space);
  Collector c;
  c.max_rows = max_rows;
  std::string line;
  bool first = true;
  try {
    while (std::getline(in, line)) {
      if (first && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
      first = false;
      if (!in.eof()) line.push_back('\n');
      if (csv_parse(&p, line.data(), line.size(), on_field, on_row, &c) != line.size())
        throw Error(str_cat(name, ":", c.line, ": malformed CSV (", csv_strerror(csv_error(&p)),
                            "; a quote inside an unquoted field, or text after a closing quote)"));
      ++c.line;
      if (max_rows > 0 && static_cast<int64_t>(c.rows.size()) > max_rows) break;
    }
    HKT_CHECK(!in.bad(), name, ": read error after line ", c.line - 1);
    if (csv_fini(&p, on_field, on_row, &c) != 0)
      throw Error(str_cat(name, ":", c.row_start, ": a quoted field is never closed (the file ends inside it)"));
  } catch (...) {
    csv_free(&p);
    throw;
  }
  csv_free(&p);
  return std::move(c.rows);
}

// The index of a column: its header name, or a 0-based number without a header.
size_t column_index(const std::string& col, const std::vector<std::string>* header, const std::string& name,
                    const char* what, char delimiter) {
  if (header) {
    for (size_t k = 0; k < header->size(); ++k)
      if ((*header)[k] == col) return k;
    std::string known;
    for (const std::string& h : *header) known += (known.empty() ? "" : ", ") + ("'" + h + "'");
    throw Error(str_cat(name, ":1: no ", what, " column '", col, "' in the header (columns: ", known,
                        "; the file is read as ", delimiter == '\t' ? "tab" : "comma", "-separated)"));
  }
  size_t pos = 0;
  int64_t k = -1;
  try {
    k = std::stoll(col, &pos);
  } catch (const std::exception&) {
  }
  HKT_CHECK(pos == col.size() && k >= 0 && k < 100000, name, ": the ", what, " column '", col,
            "' must be a 0-based column number when the file has no header row");
  return static_cast<size_t>(k);
}

template <class Stream>
TextTable table_from(Stream& in, const std::string& name, const TextFormat& f, bool labelled, int64_t max_rows) {
  auto rows = parse_rows(in, name, f.delimiter, max_rows > 0 ? max_rows + (f.header ? 1 : 0) : 0);
  HKT_CHECK(!rows.empty(), name, ": empty file (no rows)");
  const std::vector<std::string>* header = f.header ? &rows.front().second : nullptr;
  const size_t ti = column_index(f.text_column, header, name, "text", f.delimiter);
  const size_t li = labelled ? column_index(f.label_column, header, name, "label", f.delimiter) : 0;
  TextTable t;
  t.path = name;
  for (size_t r = f.header ? 1 : 0; r < rows.size(); ++r) {
    if (max_rows > 0 && t.size() >= max_rows) break;
    const auto& [line, fields] = rows[r];
    const size_t need = std::max(ti, labelled ? li : 0) + 1;
    HKT_CHECK(fields.size() >= need, name, ":", line, ": ", fields.size(), " field", fields.size() == 1 ? "" : "s",
              ", but the ", fields.size() <= ti ? "text" : "label", " column is field ",
              (fields.size() <= ti ? ti : li) + 1, " (a missing column, or the wrong delimiter: this file is read as ",
              f.delimiter == '\t' ? "tab" : "comma", "-separated)");
    t.texts.push_back(fields[ti]);
    t.labels.push_back(labelled ? fields[li] : std::string());
    t.lines.push_back(line);
  }
  HKT_CHECK(t.size() > 0, name, ": no data rows", f.header ? " after the header" : "");
  return t;
}

// The next UTF-8 code point of s at i (advancing i), or an error naming `where` and the byte.
std::string next_char(const std::string& s, size_t& i, const std::string& where) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  bool ok = n > 0 && i + n <= s.size();
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; ok && k < n; ++k) {
    ok = (b(i + k) & 0xC0) == 0x80;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // No overlong forms, no surrogates, nothing past U+10FFFF.
  ok = ok && !(n == 2 && cp < 0x80) && !(n == 3 && cp < 0x800) && !(n == 4 && cp < 0x10000) &&
       !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
  HKT_CHECK(ok, where, ": invalid UTF-8 at byte ", i + 1, " of the text (byte 0x", std::hex, static_cast<int>(c),
            std::dec, "); tokenizer 'bytes' reads any bytes");
  std::string out = s.substr(i, n);
  i += n;
  return out;
}

// Checks that s is valid UTF-8 (JSON, which encoding.json is, holds nothing else): an error names
// `where`, `what` and the byte.
void check_utf8(const std::string& s, const std::string& where, const char* what) {
  try {
    for (size_t i = 0; i < s.size();) next_char(s, i, where);
  } catch (const Error&) {
    size_t i = 0;
    try {
      while (i < s.size()) next_char(s, i, where);
    } catch (const Error&) {
    }
    throw Error(str_cat(where, ": the ", what, " '", s.substr(0, 40), "' is not valid UTF-8 (byte ", i + 1, ")"));
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t j = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > j) out.push_back(s.substr(j, i - j));
  }
  return out;
}

void check_tokenizer(const std::string& t, const std::string& what) {
  HKT_CHECK(t == "bytes" || t == "chars" || t == "vocab", what, ": unknown tokenizer '", t,
            "' (known: bytes, chars, vocab)");
}
void check_truncate(const std::string& t, const std::string& what) {
  HKT_CHECK(t == "head" || t == "tail" || t == "refuse", what, ": unknown truncation rule '", t,
            "' (known: head, tail, refuse)");
}

}  // namespace

TextFormat text_format_for(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  HKT_CHECK(ext == ".tsv" || ext == ".txt" || ext == ".csv", "'", path,
            "': the format comes from the extension: .tsv or .txt (tab-separated) or .csv (comma-separated)");
  TextFormat f;
  f.delimiter = ext == ".csv" ? ',' : '\t';
  return f;
}

TextTable read_text_table(const std::string& path, const TextFormat& f, bool labelled, int64_t max_rows) {
  HKT_CHECK(std::filesystem::is_regular_file(path), "'", path, "': no such file");
  std::ifstream in(path, std::ios::binary);
  HKT_CHECK(in, "'", path, "': cannot open it for reading");
  return table_from(in, path, f, labelled, max_rows);
}

TextTable parse_text_table(const std::string& data, const std::string& name, const TextFormat& f, bool labelled,
                           int64_t max_rows) {
  std::istringstream in(data);
  return table_from(in, name, f, labelled, max_rows);
}

int64_t TextEncoding::vocab_size() const {
  return tokenizer == "bytes" ? 257 : 2 + static_cast<int64_t>(vocabulary.size());
}

std::string TextEncoding::to_json() const {
  nlohmann::json j = {{"tokenizer", tokenizer}, {"truncate", truncate}, {"classes", classes},
                      {"vocab_size", vocab_size()}, {"vocabulary", vocabulary}};
  try {
    return j.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {  // fit_encoding checks what it makes; an encoding built by hand
    throw Error(str_cat("text encoding: a name or token is not valid UTF-8 (", e.what(), ")"));
  }
}

TextEncoding TextEncoding::from_json(const std::string& text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(str_cat(what, ": not JSON (", e.what(), ")"));
  }
  HKT_CHECK(j.is_object(), what, ": not a JSON object");
  TextEncoding e;
  try {
    e.tokenizer = j.at("tokenizer").get<std::string>();
    e.truncate = j.at("truncate").get<std::string>();
    e.classes = j.at("classes").get<std::vector<std::string>>();
    e.vocabulary = j.at("vocabulary").get<std::vector<std::string>>();
  } catch (const std::exception& ex) {
    throw Error(str_cat(what, ": ", ex.what()));
  }
  check_tokenizer(e.tokenizer, what);
  check_truncate(e.truncate, what);
  HKT_CHECK(e.classes.size() >= 2, what, ": needs at least 2 classes, has ", e.classes.size());
  HKT_CHECK(e.tokenizer != "bytes" || e.vocabulary.empty(), what, ": tokenizer 'bytes' has no vocabulary");
  return e;
}

TextEncoding fit_encoding(const TextTable& train, const EncodingOptions& opt) {
  check_tokenizer(opt.tokenizer, "text");
  check_truncate(opt.truncate, "text");
  TextEncoding e;
  e.tokenizer = opt.tokenizer;
  e.truncate = opt.truncate;
  if (opt.tokenizer == "chars") {
    std::set<std::pair<uint32_t, std::string>> seen;  // in code point order
    std::set<std::string> have;
    for (int64_t r = 0; r < train.size(); ++r) {
      const std::string where = str_cat(train.path, ":", train.lines[r]);
      const std::string& s = train.texts[r];
      for (size_t i = 0; i < s.size();) {
        std::string ch = next_char(s, i, where);
        if (have.insert(ch).second) {
          uint32_t cp = 0;
          for (unsigned char c : ch) cp = (cp << 8) | c;  // UTF-8 byte order is code point order
          seen.emplace(cp, std::move(ch));
        }
      }
    }
    for (const auto& [cp, ch] : seen) e.vocabulary.push_back(ch);
  } else if (opt.tokenizer == "vocab") {
    HKT_CHECK(!opt.vocab_file.empty(), "text: tokenizer 'vocab' needs a vocabulary file (--vocab-file)");
    std::ifstream in(opt.vocab_file, std::ios::binary);
    HKT_CHECK(std::filesystem::is_regular_file(opt.vocab_file) && in, "'", opt.vocab_file,
              "': cannot read the vocabulary file");
    std::set<std::string> have;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::vector<std::string> w = words(line);
      HKT_CHECK(w.size() <= 1, opt.vocab_file, ":", n, ": one word a line (found ", w.size(), ")");
      if (w.empty()) continue;
      HKT_CHECK(have.insert(w[0]).second, opt.vocab_file, ":", n, ": '", w[0], "' is listed twice");
      e.vocabulary.push_back(w[0]);
    }
    HKT_CHECK(!e.vocabulary.empty(), "'", opt.vocab_file, "': the vocabulary file has no words");
  }
  for (int64_t r = 0; r < train.size(); ++r) check_utf8(train.labels[r], str_cat(train.path, ":", train.lines[r]), "label");
  for (const std::string& c : opt.classes) check_utf8(c, "text", "class name");
  if (opt.classes.empty()) {
    std::set<std::string> labels(train.labels.begin(), train.labels.end());
    e.classes.assign(labels.begin(), labels.end());
  } else {
    std::set<std::string> have;
    for (const std::string& c : opt.classes) HKT_CHECK(have.insert(c).second, "text: class '", c, "' is listed twice");
    e.classes = opt.classes;
  }
  HKT_CHECK(e.classes.size() >= 2, train.path, ": needs at least 2 classes, the labels hold ", e.classes.size());
  return e;
}

std::vector<int64_t> encode_text(const std::string& text, const TextEncoding& enc, const std::string& where) {
  std::vector<int64_t> ids;
  if (enc.tokenizer == "bytes") {
    ids.reserve(text.size());
    for (unsigned char c : text) ids.push_back(static_cast<int64_t>(c) + 1);
    return ids;
  }
  std::map<std::string, int64_t> index;
  for (size_t k = 0; k < enc.vocabulary.size(); ++k) index.emplace(enc.vocabulary[k], static_cast<int64_t>(k) + 2);
  const auto id = [&](const std::string& tok) {
    auto it = index.find(tok);
    return it == index.end() ? int64_t{1} : it->second;
  };
  if (enc.tokenizer == "chars") {
    for (size_t i = 0; i < text.size();) ids.push_back(id(next_char(text, i, where)));
  } else {
    for (const std::string& w : words(text)) ids.push_back(id(w));
  }
  return ids;
}

Dataset encode_table(const TextTable& t, const TextEncoding& enc, int64_t seq_len, const std::string& name,
                     EncodeStats* stats) {
  HKT_CHECK(seq_len >= 1, name, ": seq_len must be >= 1, got ", seq_len);
  std::map<std::string, int64_t> cls;
  std::string known;
  for (size_t k = 0; k < enc.classes.size(); ++k) {
    cls.emplace(enc.classes[k], static_cast<int64_t>(k));
    known += (known.empty() ? "'" : ", '") + enc.classes[k] + "'";
  }
  const bool labelled = std::any_of(t.labels.begin(), t.labels.end(), [](const std::string& l) { return !l.empty(); });
  EncodeStats st;
  Dataset d;
  d.name = name;
  d.seq_len = seq_len;
  d.vocab = enc.vocab_size();
  d.classes = static_cast<int64_t>(enc.classes.size());
  d.pad_id = 0;
  for (int64_t r = 0; r < t.size(); ++r) {
    const std::string where = str_cat(t.path, ":", t.lines[r]);
    std::vector<int64_t> ids = encode_text(t.texts[r], enc, where);
    if (enc.tokenizer != "bytes")
      st.unknown += std::count(ids.begin(), ids.end(), int64_t{1});
    if (ids.empty()) {
      ++st.empty;
      ids.push_back(1);
    }
    if (static_cast<int64_t>(ids.size()) > seq_len) {
      HKT_CHECK(enc.truncate != "refuse", where, ": ", ids.size(), " tokens, longer than seq_len ", seq_len,
                " (truncate: head keeps the first ", seq_len, ", tail the last ", seq_len, ")");
      ++st.truncated;
      if (enc.truncate == "head") ids.resize(static_cast<size_t>(seq_len));
      else ids.erase(ids.begin(), ids.end() - seq_len);
    }
    int64_t label = 0;
    if (labelled) {
      auto it = cls.find(t.labels[r]);
      HKT_CHECK(it != cls.end(), where, ": label '", t.labels[r], "' is not one of the classes (", known, ")");
      label = it->second;
    }
    d.add_tokens(ids, label);
  }
  d.validate();
  if (stats) *stats = st;
  return d;
}

}  // namespace hkt::tasks
