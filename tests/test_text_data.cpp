// The text task's reader (hkt/tasks/text_data.hpp): RFC 4180 quoting through libcsv, columns by
// name or number, the three tokenisers, class order, truncation, and bad input named by file and line.
#include <doctest/doctest.h>

#include <fstream>

#include "helpers/temp_dir.hpp"
#include "hkt/core/error.hpp"
#include "hkt/tasks/text_data.hpp"

using namespace hkt;
using namespace hkt::tasks;

namespace {
TextFormat tsv() { return TextFormat{}; }
TextFormat csv() {
  TextFormat f;
  f.delimiter = ',';
  return f;
}
}  // namespace

TEST_CASE("text reader: RFC 4180 quoting, header columns in any order, line numbers after multi-line fields") {
  const std::string data =
      "\xEF\xBB\xBF"
      "id,label,text\n"
      "1,pos,\"a, b\"\n"
      "2,neg,\"say \"\"hi\"\"\"\n"
      "3,pos,\"two\nlines\"\n"
      "4,neg,  spaced  \r\n"
      "5,pos,\n";
  const TextTable t = parse_text_table(data, "d.csv", csv(), true);
  REQUIRE(t.size() == 5);
  CHECK(t.texts[0] == "a, b");
  CHECK(t.texts[1] == "say \"hi\"");
  CHECK(t.texts[2] == "two\nlines");
  CHECK(t.texts[3] == "  spaced  ");  // spaces belong to the field
  CHECK(t.texts[4].empty());
  CHECK(t.labels == std::vector<std::string>{"pos", "neg", "pos", "neg", "pos"});
  CHECK(t.lines == std::vector<int64_t>{2, 3, 4, 6, 7});
}

TEST_CASE("text reader: columns by number without a header; max_rows; a file on disk") {
  TextFormat f = tsv();
  f.header = false;
  f.text_column = "1";
  f.label_column = "0";
  const TextTable t = parse_text_table("x\thello\ny\tworld\nx\tagain\n", "n.tsv", f, true, 2);
  CHECK(t.size() == 2);
  CHECK(t.texts[1] == "world");
  CHECK(t.labels[1] == "y");
  test::TempDir tmp("text_reader");
  const std::string path = (tmp.path / "a.tsv").string();
  std::ofstream(path) << "text\tlabel\nok\t1\n";
  CHECK(read_text_table(path, text_format_for(path), true).texts[0] == "ok");
  CHECK(text_format_for("x.CSV").delimiter == ',');
  CHECK_THROWS_WITH(text_format_for("x.json"), doctest::Contains(".tsv or .txt"));
  CHECK_THROWS_WITH(read_text_table((tmp.path / "none.tsv").string(), tsv(), true), doctest::Contains("no such file"));
}

TEST_CASE("text reader: bad input names the file and line") {
  CHECK_THROWS_WITH(parse_text_table("", "e.tsv", tsv(), true), doctest::Contains("e.tsv: empty file"));
  CHECK_THROWS_WITH(parse_text_table("text\tlabel\n", "h.tsv", tsv(), true), doctest::Contains("no data rows"));
  CHECK_THROWS_WITH(parse_text_table("txt\tlabel\na\tb\n", "c.tsv", tsv(), true),
                    doctest::Contains("c.tsv:1: no text column 'text' in the header (columns: 'txt', 'label'; the file is read as tab-separated)"));
  // A row with the label column missing.
  CHECK_THROWS_WITH(parse_text_table("text\tlabel\na\tb\nonly text\nc\td\n", "m.tsv", tsv(), true),
                    doctest::Contains("m.tsv:3: 1 field, but the label column is field 2"));
  // A comma file read as tab-separated: the hint names the delimiter.
  CHECK_THROWS_WITH(parse_text_table("text,label\na,b\n", "w.tsv", tsv(), true), doctest::Contains("tab-separated"));
  // Strict quoting: a quote inside an unquoted field, and a quote never closed.
  CHECK_THROWS_WITH(parse_text_table("text,label\nab\"c,x\n", "q.csv", csv(), true), doctest::Contains("q.csv:2: malformed CSV"));
  CHECK_THROWS_WITH(parse_text_table("text,label\n\"open,x\ny,z\n", "u.csv", csv(), true),
                    doctest::Contains("u.csv:2: a quoted field is never closed"));
  TextFormat f = tsv();
  f.header = false;
  f.text_column = "text";
  CHECK_THROWS_WITH(parse_text_table("a\tb\n", "n.tsv", f, true), doctest::Contains("0-based column number"));
}

TEST_CASE("text encodings: bytes, chars (UTF-8), a vocabulary file; classes sorted or given") {
  const TextTable t = parse_text_table("text\tlabel\ncafé\tb\n€ a\ta\n", "u.tsv", tsv(), true);
  SUBCASE("bytes") {
    const TextEncoding e = fit_encoding(t, {});
    CHECK(e.vocab_size() == 257);
    CHECK(e.classes == std::vector<std::string>{"a", "b"});
    CHECK(encode_text("A\xff", e, "x") == std::vector<int64_t>{66, 256});
  }
  SUBCASE("chars") {
    EncodingOptions o;
    o.tokenizer = "chars";
    const TextEncoding e = fit_encoding(t, o);
    // Code point order: ' ', 'a', 'c', 'f', 'é', '€'.
    CHECK(e.vocabulary == std::vector<std::string>{" ", "a", "c", "f", "\xC3\xA9", "\xE2\x82\xAC"});
    CHECK(encode_text("café!", e, "x") == std::vector<int64_t>{4, 3, 5, 6, 1});  // '!' unknown
    CHECK_THROWS_WITH(encode_text("ok\xC3", e, "f.tsv:9"), doctest::Contains("f.tsv:9: invalid UTF-8 at byte 3"));
    CHECK_THROWS_WITH(encode_text("\xC0\xAF", e, "f.tsv:9"), doctest::Contains("invalid UTF-8 at byte 1"));  // overlong
    CHECK_THROWS_WITH(encode_text("\xED\xA0\x80", e, "f.tsv:9"), doctest::Contains("invalid UTF-8"));      // surrogate
    const TextTable bad = parse_text_table("text\tlabel\nok\ta\n\xFF\tb\n", "bad.tsv", tsv(), true);
    CHECK_THROWS_WITH(fit_encoding(bad, o), doctest::Contains("bad.tsv:3: invalid UTF-8"));
  }
  SUBCASE("vocabulary file") {
    test::TempDir tmp("text_vocab");
    const std::string v = (tmp.path / "vocab.txt").string();
    std::ofstream(v) << "the\ncat\n\nsat\r\n";
    EncodingOptions o;
    o.tokenizer = "vocab";
    o.vocab_file = v;
    const TextEncoding e = fit_encoding(t, o);
    CHECK(e.vocab_size() == 5);
    CHECK(encode_text("  the dog\tsat ", e, "x") == std::vector<int64_t>{2, 1, 4});
    std::ofstream(v) << "a\nb c\n";
    CHECK_THROWS_WITH(fit_encoding(t, o), doctest::Contains("vocab.txt:2: one word a line"));
    std::ofstream(v) << "a\na\n";
    CHECK_THROWS_WITH(fit_encoding(t, o), doctest::Contains("vocab.txt:2: 'a' is listed twice"));
    o.vocab_file = "";
    CHECK_THROWS_WITH(fit_encoding(t, o), doctest::Contains("needs a vocabulary file"));
  }
  SUBCASE("labels must be valid UTF-8 (encoding.json is JSON; found by fuzz_text)") {
    const TextTable bad = parse_text_table("text\tlabel\na\tok\nb\tbad\x8c\n", "lab.tsv", tsv(), true);
    CHECK_THROWS_WITH(fit_encoding(bad, {}), doctest::Contains("lab.tsv:3: the label 'bad"));
    EncodingOptions o;
    o.classes = {"a", "\xff"};
    CHECK_THROWS_WITH(fit_encoding(t, o), doctest::Contains("the class name"));
  }
  SUBCASE("class order given; too few classes; unknown names") {
    EncodingOptions o;
    o.classes = {"b", "a", "c"};
    CHECK(fit_encoding(t, o).classes == std::vector<std::string>{"b", "a", "c"});
    const TextTable one = parse_text_table("text\tlabel\nx\ta\ny\ta\n", "one.tsv", tsv(), true);
    CHECK_THROWS_WITH(fit_encoding(one, {}), doctest::Contains("at least 2 classes"));
    o.tokenizer = "words";
    CHECK_THROWS_WITH(fit_encoding(t, o), doctest::Contains("unknown tokenizer 'words'"));
  }
}

TEST_CASE("encode_table: truncation head / tail / refuse, unknown labels, the JSON round trip") {
  const TextTable t = parse_text_table("text\tlabel\nabcdef\tx\nab\ty\n\tx\n", "tr.tsv", tsv(), true);
  EncodingOptions o;
  o.truncate = "head";
  TextEncoding e = fit_encoding(t, o);
  EncodeStats st;
  Dataset d = encode_table(t, e, 4, "tr/train", &st);
  CHECK(st.truncated == 1);
  CHECK(st.empty == 1);
  CHECK(d.size() == 3);
  CHECK(d.lengths == std::vector<int64_t>{4, 2, 1});
  CHECK(std::vector<int64_t>(d.tokens.begin(), d.tokens.begin() + 4) == std::vector<int64_t>{98, 99, 100, 101});
  CHECK(d.labels == std::vector<int64_t>{0, 1, 0});
  e.truncate = "tail";
  d = encode_table(t, e, 4, "tr/train");
  CHECK(std::vector<int64_t>(d.tokens.begin(), d.tokens.begin() + 4) == std::vector<int64_t>{100, 101, 102, 103});
  e.truncate = "refuse";
  CHECK_THROWS_WITH(encode_table(t, e, 4, "tr/train"), doctest::Contains("tr.tsv:2: 6 tokens, longer than seq_len 4"));
  // A label at test time that training never saw.
  const TextTable test = parse_text_table("text\tlabel\nab\tz\n", "te.tsv", tsv(), true);
  CHECK_THROWS_WITH(encode_table(test, e, 8, "tr/test"),
                    doctest::Contains("te.tsv:2: label 'z' is not one of the classes ('x', 'y')"));
  // Unlabelled inputs (prediction) get label 0.
  const TextTable un = parse_text_table("text\nab\n", "un.tsv", tsv(), false);
  CHECK(encode_table(un, e, 8, "un").labels == std::vector<int64_t>{0});
  const TextEncoding back = TextEncoding::from_json(e.to_json(), "enc.json");
  CHECK(back.to_json() == e.to_json());
  CHECK_THROWS_WITH(TextEncoding::from_json("{", "enc.json"), doctest::Contains("enc.json: not JSON"));
  CHECK_THROWS_WITH(TextEncoding::from_json(R"({"tokenizer":"x","truncate":"head","classes":["a","b"],"vocabulary":[]})",
                                            "enc.json"),
                    doctest::Contains("unknown tokenizer 'x'"));
}
