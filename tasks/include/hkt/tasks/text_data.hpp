// A user's own labelled text (docs/tasks.md, "Your own data"): TSV or CSV files (RFC 4180 quoting,
// parsed by libcsv in strict mode), one example a row, with a text and a label column; the text
// tokenised as UTF-8 bytes, as Unicode characters, or by a vocabulary file; labels as strings mapped
// to classes in a stated order. Everything a later command needs to read new inputs the same way
// (the tokeniser and its vocabulary, the class names, the truncation rule) is a TextEncoding, written
// to the run folder as JSON and read back by hkt-eval and hkt-predict.
//
//   TextFormat f = text_format_for("reviews.tsv");           // tab-separated, header row
//   TextTable rows = read_text_table("reviews.tsv", f, true);
//   TextEncoding enc = fit_encoding(rows, {"chars"});        // vocabulary and classes from training rows
//   Dataset d = encode_table(rows, enc, 512, "reviews/train", &stats);
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hkt/tasks/dataset.hpp"

namespace hkt::tasks {

// How to read one file.
struct TextFormat {
  char delimiter = '\t';            // '\t' (.tsv) or ',' (.csv)
  bool header = true;               // the first row names the columns
  std::string text_column = "text";   // a header name, or a 0-based index ("0") without a header
  std::string label_column = "label";
};
// The format a file's extension implies: .tsv / .txt tab-separated, .csv comma-separated (else an
// error naming the file); header row, columns "text" and "label".
TextFormat text_format_for(const std::string& path);

// The rows of a file: the text and label fields (labels empty when not `labelled`) and the line each
// row starts on (1-based, counting the header).
struct TextTable {
  std::string path;
  std::vector<std::string> texts, labels;
  std::vector<int64_t> lines;
  int64_t size() const { return static_cast<int64_t>(texts.size()); }
};
// Throws hkt::Error naming the file and line for a missing file, a quoting error, a row without the
// text or label column, an unknown column name, or an empty file. At most `max_rows` rows (0 = all).
TextTable read_text_table(const std::string& path, const TextFormat& f, bool labelled, int64_t max_rows = 0);
// The same from text in memory (`name` stands for the file in messages); the fuzz target's entry.
TextTable parse_text_table(const std::string& data, const std::string& name, const TextFormat& f, bool labelled,
                           int64_t max_rows = 0);

// The tokeniser, its vocabulary, the class names and the truncation rule.
struct TextEncoding {
  std::string tokenizer = "bytes";  // bytes: UTF-8 bytes (id = byte + 1, vocab 257); chars: Unicode code
                                    // points of the training text (id = rank + 2); vocab: whitespace-separated
                                    // words of a vocabulary file (id = line + 2). 0 = padding, 1 = unknown.
  std::vector<std::string> vocabulary;  // chars: the characters in id order; vocab: the words
  std::vector<std::string> classes;     // class names in class order
  std::string truncate = "refuse";      // head: keep the first T tokens; tail: the last T; refuse: an error
  int64_t vocab_size() const;
  std::string to_json() const;
  static TextEncoding from_json(const std::string& text, const std::string& what);
};

// What fit_encoding needs beyond the rows.
struct EncodingOptions {
  std::string tokenizer = "bytes";
  std::string vocab_file;             // tokenizer = vocab
  std::vector<std::string> classes;   // the class order; empty: the labels of the rows, sorted (bytewise)
  std::string truncate = "refuse";
};
// The encoding of a training table: for chars its vocabulary (every code point of the rows), for
// vocab the file's words; the classes. Throws for invalid UTF-8 (chars), a bad vocabulary file, a
// label outside `classes`, fewer than 2 classes.
TextEncoding fit_encoding(const TextTable& train, const EncodingOptions& opt);

// Token ids of one text (before padding), or an hkt::Error naming `where` (file:line) for invalid
// UTF-8 under chars.
std::vector<int64_t> encode_text(const std::string& text, const TextEncoding& enc, const std::string& where);

// Counts of what encode_table did.
struct EncodeStats {
  int64_t truncated = 0;   // rows longer than T, cut by the truncation rule
  int64_t empty = 0;       // rows with no token (kept as one unknown token)
  int64_t unknown = 0;     // tokens outside the vocabulary
};
// A Dataset of the rows at length T. Labels must be among enc.classes (an error names the file, line
// and label, and lists the classes); an unlabelled table gets label 0 everywhere.
Dataset encode_table(const TextTable& t, const TextEncoding& enc, int64_t seq_len, const std::string& name,
                     EncodeStats* stats = nullptr);

// The text task (--task text): where the files are and how to read them. Not set for other tasks.
struct TextTaskOptions {
  std::string train, val, test;       // files (.tsv / .txt / .csv); val and test empty: carved from train
  std::string text_column = "text", label_column = "label";
  bool header = true;
  std::string tokenizer = "bytes", vocab_file, truncate = "refuse";
  std::vector<std::string> classes;   // class order; empty: the training labels, sorted bytewise
  bool operator==(const TextTaskOptions&) const = default;
  bool set() const { return !train.empty(); }
};

// The three splits of a text task at length seq_len (0: the longest training text, at most 4,096
// tokens), the encoding fitted on the training file (Splits::encoding holds its JSON). A missing
// val / test file is carved from the training rows (val_size / test_size, default a tenth each, at
// least one), seeded. train_size > 0 keeps a seeded subset of the training rows. Prints how many rows
// were truncated.
Splits load_text(const TextTaskOptions& t, int64_t seq_len, int64_t train_size, int64_t val_size, int64_t test_size,
                 uint64_t seed);

}  // namespace hkt::tasks
