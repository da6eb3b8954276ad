// ListOps: tokenizer, evaluator, generator, TSV files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/tasks/listops.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::check_error;
using hkt::test::TempDir;

namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

ListOpsOptions small_options(uint64_t seed = 1) {
  ListOpsOptions o;
  o.train_size = 300;
  o.val_size = 50;
  o.test_size = 50;
  o.seq_len = 64;
  o.seed = seed;
  return o;
}

// Operator nesting depth (leaf levels counted) and argument counts of ids.
struct TreeShape {
  int64_t depth = 0, min_args = 1 << 30, max_args = 0;
};
TreeShape tree_shape(const std::vector<int64_t>& ids) {
  TreeShape s;
  std::vector<int64_t> args;  // argument count of each open operator
  for (int64_t id : ids) {
    if (id == kListOpsEnd) {
      s.min_args = std::min(s.min_args, args.back());
      s.max_args = std::max(s.max_args, args.back());
      args.pop_back();
      continue;
    }
    if (!args.empty()) ++args.back();
    s.depth = std::max<int64_t>(s.depth, static_cast<int64_t>(args.size()) + 1);
    if (id >= kListOpsMin && id <= kListOpsSm) args.push_back(0);
  }
  return s;
}

std::vector<int64_t> example(const Dataset& d, int64_t i) {
  return std::vector<int64_t>(d.tokens.begin() + i * d.seq_len, d.tokens.begin() + i * d.seq_len + d.lengths[i]);
}

void check_same(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.seq_len == b.seq_len);
  CHECK(a.vocab == b.vocab);
  CHECK(a.classes == b.classes);
  CHECK(a.pad_id == b.pad_id);
  CHECK(a.tokens == b.tokens);
  CHECK(a.lengths == b.lengths);
  CHECK(a.labels == b.labels);
}

}  // namespace

TEST_CASE("listops: vocabulary and tokenizer") {
  CHECK(listops_vocab() == 16);
  CHECK(listops_token_name(0) == "<pad>");
  CHECK(listops_token_name(1) == "0");
  CHECK(listops_token_name(10) == "9");
  CHECK(listops_token_name(11) == "[MIN");
  CHECK(listops_token_name(12) == "[MAX");
  CHECK(listops_token_name(13) == "[MED");
  CHECK(listops_token_name(14) == "[SM");
  CHECK(listops_token_name(15) == "]");
  check_error([] { listops_token_name(16); }, "token id 16");
  for (int64_t id = 1; id < 16; ++id) CHECK(tokenize_listops(listops_token_name(id)) == std::vector<int64_t>{id});

  CHECK(tokenize_listops("[MAX 2 9 ]") == std::vector<int64_t>{12, 3, 10, 15});
  CHECK(tokenize_listops("( ( ( [MAX 2 ) 9 ) ] )") == std::vector<int64_t>{12, 3, 10, 15});
  CHECK(tokenize_listops("  [MIN\t0  [SM 1 ]\n]  ") == std::vector<int64_t>{11, 1, 14, 2, 15, 15});
  CHECK(tokenize_listops("").empty());
  check_error([] { tokenize_listops("[MAX 2 [MAXX 3 ] ]"); }, "unknown token '[MAXX' at token 2");
  check_error([] { tokenize_listops("[SM 10 ]"); }, "unknown token '10'");
  check_error([] { tokenize_listops("[MAX 1 2]"); }, "unknown token '2]'");
}

TEST_CASE("listops: evaluator, each operator") {
  CHECK(evaluate_listops("7") == 7);
  CHECK(evaluate_listops("[MIN 4 7 ]") == 4);
  CHECK(evaluate_listops("[MIN 9 3 5 3 8 ]") == 3);
  CHECK(evaluate_listops("[MAX 2 9 ]") == 9);
  CHECK(evaluate_listops("[MAX 0 0 1 ]") == 1);
  CHECK(evaluate_listops("[MED 5 1 9 ]") == 5);             // odd count: middle of 1 5 9
  CHECK(evaluate_listops("[MED 1 2 3 4 ]") == 2);           // int(2.5)
  CHECK(evaluate_listops("[MED 9 8 ]") == 8);               // int(8.5)
  CHECK(evaluate_listops("[MED 3 1 4 1 5 9 2 6 ]") == 3);   // sorted 1 1 2 3 4 5 6 9 -> int(3.5)
  CHECK(evaluate_listops("[MED 0 2 ]") == 1);
  CHECK(evaluate_listops("[SM 1 2 3 ]") == 6);
  CHECK(evaluate_listops("[SM 5 6 ]") == 1);                // 11 % 10
  CHECK(evaluate_listops("[SM 9 9 9 9 9 9 9 9 9 9 ]") == 0);  // 90 % 10
  CHECK(evaluate_listops("[SM 4 ]") == 4);                  // one argument is accepted
}

TEST_CASE("listops: evaluator, nesting and LRA's parentheses") {
  CHECK(evaluate_listops("[MAX 2 9 [MIN 4 7 ] 0 ]") == 9);
  CHECK(evaluate_listops("[SM 5 6 [MED 1 2 3 4 ] ]") == 3);  // (5 + 6 + 2) % 10
  CHECK(evaluate_listops("[MIN [MAX 1 [SM 8 7 ] ] [MED 9 [MIN 6 7 ] 8 ] ]") == 5);  // min(max(1,5), med(9,6,8))
  CHECK(evaluate_listops("[MED [SM 9 9 ] [SM 1 ] [MAX 3 ] [MIN 7 2 ] ]") == 2);  // med(8,1,3,2) = int(2.5)
  CHECK(evaluate_listops("[MAX [MAX [MAX [MAX [MAX [MAX [MAX [MAX [MAX 1 3 ] 2 ] ] ] ] ] ] ] ]") == 3);

  // LRA's to_string: each node (left, right) is written "( left right )".
  CHECK(listops_to_expression(tokenize_listops("[MAX 2 9 ]")) == "( ( ( [MAX 2 ) 9 ) ] )");
  const std::string lra = "( ( ( ( [SM 5 ) 6 ) ( ( ( ( ( [MED 1 ) 2 ) 3 ) 4 ) ] ) ) ] )";
  CHECK(listops_to_expression(tokenize_listops("[SM 5 6 [MED 1 2 3 4 ] ]")) == lra);
  CHECK(evaluate_listops(lra) == 3);
  CHECK(evaluate_listops("( ( ( [MAX 2 ) 9 ) ] )") == 9);
  CHECK(evaluate_listops("( ( ( ( ( [MAX 2 ) 9 ) ( ( ( [MIN 4 ) 7 ) ] ) ) 0 ) ] )") == 9);
  CHECK(listops_to_expression({5}) == "4");
  // Round trip text -> ids -> text for a deeper tree.
  const std::string deep = "[MIN [MAX 1 [SM 8 7 ] ] [MED 9 [MIN 6 7 ] 8 ] ]";
  const std::string paren = listops_to_expression(tokenize_listops(deep));
  CHECK(tokenize_listops(paren) == tokenize_listops(deep));
  CHECK(evaluate_listops(paren) == evaluate_listops(deep));
  CHECK(evaluate_listops_ids(tokenize_listops(deep)) == 5);
}

TEST_CASE("listops: evaluator errors") {
  check_error([] { evaluate_listops(""); }, "empty expression");
  check_error([] { evaluate_listops("( )"); }, "empty expression");
  check_error([] { evaluate_listops("[MAX 1 2"); }, "[MAX at token 0 is never closed");
  check_error([] { evaluate_listops("1 2 ]"); }, "more than one top-level item");
  check_error([] { evaluate_listops("[MAX 1 ] 2"); }, "more than one top-level item");
  check_error([] { evaluate_listops("[MAX 1 ] [MIN 2 ]"); }, "more than one top-level item");
  check_error([] { evaluate_listops("[MIN 1 ] ]"); }, "']' at token 3 closes no operator");
  check_error([] { evaluate_listops("[SM 1 [MAX ] ]"); }, "operator [MAX at token 2 has no arguments");
  check_error([] { evaluate_listops("( ( [MAX 1 ) ] "); }, "unbalanced parentheses: 1 '(' not closed");
  check_error([] { evaluate_listops("( [MAX 1 ) ] )"); }, "unbalanced ')' at token 5");
  check_error([] { evaluate_listops("[MAX 1 [FOO 2 ] ]"); }, "unknown token '[FOO'");
  check_error([] { evaluate_listops_ids({12, 3, 0, 15}); }, "invalid token id 0");
  check_error([] { listops_to_expression({12, 15}); }, "has no arguments");
}

TEST_CASE("listops: generator is reproducible and seeded") {
  const ListOpsOptions o = small_options(1);
  const Splits a = make_listops(o), b = make_listops(o);
  check_same(a.train, b.train);
  check_same(a.val, b.val);
  check_same(a.test, b.test);
  CHECK(a.train.size() == 300);
  CHECK(a.val.size() == 50);
  CHECK(a.test.size() == 50);
  CHECK(a.train.name == "listops/train");
  CHECK(a.val.name == "listops/val");
  CHECK(a.test.name == "listops/test");
  CHECK(a.train.vocab == 16);
  CHECK(a.train.classes == 10);
  CHECK(a.train.pad_id == 0);
  CHECK(a.train.seq_len == 64);
  CHECK(a.train.features == 0);

  const Splits c = make_listops(small_options(2));
  CHECK(a.train.tokens != c.train.tokens);
  CHECK(a.test.tokens != c.test.tokens);

  // A single attempt depends only on (seed, attempt).
  CHECK(generate_listops_ids(o, 17) == generate_listops_ids(o, 17));
  CHECK(generate_listops_expression(o, 17) ==
        (generate_listops_ids(o, 17).empty() ? std::string() : listops_to_expression(generate_listops_ids(o, 17))));

  // The text rows are the same data.
  const ListOpsSplitRows rows = generate_listops(o);
  REQUIRE(rows.train.size() == 300);
  REQUIRE(rows.val.size() == 50);
  REQUIRE(rows.test.size() == 50);
  for (int64_t i = 0; i < 300; ++i) {
    CHECK(tokenize_listops(rows.train[i].first) == example(a.train, i));
    CHECK(rows.train[i].second == a.train.labels[i]);
  }
  CHECK(rows.train[0].first.rfind("( ", 0) == 0);  // LRA's parenthesis convention
}

TEST_CASE("listops: generated data is valid, distinct, within limits and spread over classes") {
  ListOpsOptions o = small_options(3);
  o.train_size = 1500;
  o.val_size = 200;
  o.test_size = 200;
  o.seq_len = 128;
  o.min_len = 20;
  const Splits s = make_listops(o);
  std::set<std::vector<int64_t>> seen;
  std::vector<int64_t> counts(10, 0);
  int64_t n = 0, max_len = 0;
  for (const Dataset* d : {&s.train, &s.val, &s.test}) {
    d->validate();
    for (int64_t i = 0; i < d->size(); ++i) {
      const std::vector<int64_t> ids = example(*d, i);
      CHECK(d->lengths[i] >= 20);
      CHECK(d->lengths[i] <= 128);
      max_len = std::max(max_len, d->lengths[i]);
      for (int64_t t = d->lengths[i]; t < d->seq_len; ++t) CHECK(d->tokens[i * d->seq_len + t] == 0);
      CHECK(evaluate_listops_ids(ids) == d->labels[i]);
      CHECK(evaluate_listops(listops_to_expression(ids)) == d->labels[i]);
      CHECK(seen.insert(ids).second);  // no duplicates within or across splits
      const TreeShape sh = tree_shape(ids);
      CHECK(sh.depth <= 10);
      CHECK(sh.min_args >= 2);
      CHECK(sh.max_args <= 10);
      ++counts[static_cast<size_t>(d->labels[i])];
      ++n;
    }
  }
  CHECK(n == 1900);
  CHECK(max_len > 100);  // the window is used up to near T
  int64_t present = 0, largest = 0;
  for (int64_t c : counts) {
    present += c > 0;
    largest = std::max(largest, c);
  }
  INFO("label counts: " << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3] << " " << counts[4]
                        << " " << counts[5] << " " << counts[6] << " " << counts[7] << " " << counts[8] << " "
                        << counts[9]);
  CHECK(present == 10);
  CHECK(largest < n / 2);

  // Tight limits are respected.
  ListOpsOptions t = small_options(4);
  t.max_depth = 3;
  t.max_args = 3;
  t.op_prob = 0.6;
  t.seq_len = 40;
  const Splits u = make_listops(t);
  int64_t deepest = 0;
  for (int64_t i = 0; i < u.train.size(); ++i) {
    const TreeShape sh = tree_shape(example(u.train, i));
    CHECK(sh.depth <= 3);
    CHECK(sh.min_args >= 2);
    CHECK(sh.max_args <= 3);
    deepest = std::max(deepest, sh.depth);
  }
  CHECK(deepest == 3);
}

TEST_CASE("listops: the length window [min_len, max_len]") {
  // max_len = seq_len is the default window: the same data.
  ListOpsOptions a = small_options(), b = small_options();
  b.max_len = b.seq_len;
  const ListOpsSplitRows ra = generate_listops(a), rb = generate_listops(b);
  CHECK(ra.train == rb.train);
  CHECK(ra.test == rb.test);
  // A window inside T: every example's token count lies in it, in every split, and
  // the model length stays T (examples are padded to it).
  ListOpsOptions w = small_options(3);
  w.min_len = 20;
  w.max_len = 40;
  const Splits s = make_listops(w);
  int64_t lo = 1 << 30, hi = 0;
  for (const Dataset* d : {&s.train, &s.val, &s.test}) {
    CHECK(d->seq_len == 64);
    for (int64_t len : d->lengths) {
      lo = std::min(lo, len);
      hi = std::max(hi, len);
    }
  }
  CHECK(lo >= 20);
  CHECK(hi <= 40);
  CHECK(hi > 30);  // the window is used, not only its lower part
  const LengthStats st = length_stats(s.train, 8);
  CHECK(st.n == 300);
  CHECK(st.min == lo);
  CHECK(st.p5 >= 20);
  CHECK(st.median >= st.p25);
  CHECK(st.p95 <= 40);
  CHECK(st.bin_width == 8);
  int64_t counted = 0;
  for (const auto& [from, n] : st.histogram) {
    CHECK(from % 8 == 0);
    CHECK(from + 8 > 20);
    CHECK(from <= 40);
    counted += n;
  }
  CHECK(counted == 300);
}

TEST_CASE("listops: generator option errors") {
  ListOpsOptions o = small_options();
  o.val_size = 0;
  check_error([&] { make_listops(o); }, "split sizes must be positive");
  o = small_options();
  o.seq_len = 3;
  check_error([&] { make_listops(o); }, "seq_len must be >= 4");
  o = small_options();
  o.min_len = 65;
  check_error([&] { make_listops(o); }, "min_len must be in [0, max_len = 64]");
  o = small_options();
  o.max_len = 65;
  check_error([&] { make_listops(o); }, "max_len must be in [0, seq_len = 64]");
  o = small_options();
  o.max_len = 3;
  check_error([&] { make_listops(o); }, "max_len must be >= 4");
  o = small_options();
  o.max_len = 30;
  o.min_len = 31;
  check_error([&] { make_listops(o); }, "min_len must be in [0, max_len = 30]");
  o = small_options();
  o.max_depth = 2;
  o.max_args = 3;
  o.min_len = 60;  // at most 1 + 3 x (1 + 3 + 1) + 1 = 17 tokens exist at depth 2
  o.train_size = 5;
  check_error([&] { make_listops(o); }, "the length window [60, 64]");
  o = small_options();
  o.max_depth = 1;
  check_error([&] { make_listops(o); }, "max_depth must be in [2, 10000]");
  o = small_options();
  o.max_args = 1;
  check_error([&] { make_listops(o); }, "max_args must be in [2");
  o = small_options();
  o.op_prob = 1.5;
  check_error([&] { make_listops(o); }, "op_prob must be in [0, 1]");
  // Only 4 operators x 10 x 10 = 400 distinct 4-token expressions exist.
  o = small_options();
  o.seq_len = 4;
  o.train_size = 1000;
  check_error([&] { make_listops(o); }, "distinct expressions found");
}

TEST_CASE("listops: TSV round trip and loading") {
  TempDir dir("listops_rt");
  const std::vector<std::pair<std::string, int64_t>> rows = {
      {"( ( ( [MAX 2 ) 9 ) ] )", 9}, {"[SM 5 6 [MED 1 2 3 4 ] ]", 3}, {"[MIN 4 7 ]", 4}};
  write_listops_tsv(dir.str("a.tsv"), rows);
  CHECK(!fs::exists(dir.str("a.tsv.tmp")));
  CHECK(read_listops_tsv(dir.str("a.tsv")) == rows);
  {
    std::ifstream f(dir.str("a.tsv"));
    std::string header;
    std::getline(f, header);
    CHECK(header == "Source\tTarget");
  }
  // Overwriting replaces the file.
  write_listops_tsv(dir.str("a.tsv"), {rows[1]});
  CHECK(read_listops_tsv(dir.str("a.tsv")).size() == 1);
  // CRLF line ends and blank lines (csv.writer's default) are accepted.
  write_text(dir.str("crlf.tsv"), "Source\tTarget\r\n( ( ( [MAX 2 ) 9 ) ] )\t9\r\n\r\n[MIN 4 7 ]\t4\r\n");
  CHECK(read_listops_tsv(dir.str("crlf.tsv")) ==
        std::vector<std::pair<std::string, int64_t>>{{"( ( ( [MAX 2 ) 9 ) ] )", 9}, {"[MIN 4 7 ]", 4}});

  // Generated data written in LRA's layout loads back to the same splits.
  const ListOpsOptions o = small_options(5);
  write_listops_dir(dir.str("lra"), generate_listops(o));
  CHECK(fs::exists(dir.str("lra/basic_train.tsv")));
  CHECK(fs::exists(dir.str("lra/basic_val.tsv")));
  CHECK(fs::exists(dir.str("lra/basic_test.tsv")));
  const Splits made = make_listops(o), loaded = load_listops_tsv(dir.str("lra"), o.seq_len);
  check_same(made.train, loaded.train);
  check_same(made.val, loaded.val);
  check_same(made.test, loaded.test);

  // A longer expression than seq_len is an error naming file and line.
  write_listops_dir(dir.str("long"), {{{"[MIN 4 7 ]", 4}, {"[SM 1 2 3 4 5 ]", 5}}, {{"[MIN 4 7 ]", 4}}, {{"[MAX 1 2 ]", 2}}});
  check_error([&] { load_listops_tsv(dir.str("long"), 5); }, "basic_train.tsv:3: expression has 7 tokens, more than seq_len = 5");
  CHECK(load_listops_tsv(dir.str("long"), 7).train.size() == 2);

  check_error([&] { write_listops_tsv(dir.str("w.tsv"), {{"[MIN 4 7 ]", 10}}); }, "target 10, expected 0-9");
  check_error([&] { write_listops_tsv(dir.str("w.tsv"), {{"[MIN 4 7 ]", 7}}); }, "evaluates to 4");
  check_error([&] { write_listops_tsv(dir.str("w.tsv"), {{"[MIN 4\t7 ]", 4}}); }, "tab or line break");
  check_error([&] { write_listops_tsv(dir.str("w.tsv"), {{"[MIN 4 7", 4}}); }, "never closed");
  check_error([&] { write_listops_tsv(dir.str("nodir/w.tsv"), {{"[MIN 4 7 ]", 4}}); }, "cannot create");
  CHECK(!fs::exists(dir.str("w.tsv")));
}

TEST_CASE("listops: bad files") {
  TempDir dir("listops_bad");
  const std::string f = dir.str("f.tsv");
  check_error([&] { read_listops_tsv(dir.str("missing.tsv")); }, "missing.tsv' not found");
  write_text(f, "");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:1: empty file");
  write_text(f, "Source,Target\n[MIN 4 7 ]\t4\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:1: bad header 'Source,Target'");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\t4\n[MAX 1 2 ] 2\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:3: no tab");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\t4\t1\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: more than one tab");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\t12\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: target '12' is not a digit 0-9");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\tx\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: target 'x' is not a digit 0-9");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\t\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: target '' is not a digit 0-9");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\t4\n( [MIN 4 7 ]\t4\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:3: listops: unbalanced parentheses");
  write_text(f, "Source\tTarget\n[MIN 4 [BAD 7 ] ]\t4\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: listops: unknown token '[BAD'");
  write_text(f, "Source\tTarget\n[MIN ]\t4\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: listops: operator [MIN at token 0 has no arguments");
  write_text(f, "Source\tTarget\n[MIN 4 7 ]\t5\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv:2: target 5 but the expression evaluates to 4");
  write_text(f, "Source\tTarget\n");
  check_error([&] { read_listops_tsv(f); }, "f.tsv: no examples");

  // Folders.
  check_error([&] { load_listops_tsv(dir.str("nope"), 64); }, "folder '");
  check_error([&] { load_listops_tsv(dir.str("nope"), 64); }, "not found");
  const std::string lra = dir.str("lra");
  fs::create_directories(lra);
  write_text(lra + "/basic_train.tsv", "Source\tTarget\n[MIN 4 7 ]\t4\n");
  check_error([&] { load_listops_tsv(lra, 64); }, "basic_val.tsv' not found");
  write_text(lra + "/basic_val.tsv", "Source\tTarget\n[MIN 4 7 ]\t4\n");
  write_text(lra + "/basic_test.tsv", "Source\tTarget\n");
  check_error([&] { load_listops_tsv(lra, 64); }, "basic_test.tsv: no examples");
  write_text(lra + "/basic_test.tsv", "Source\tTarget\n[MAX 4 7 ]\t7\n");
  const Splits s = load_listops_tsv(lra, 64);
  CHECK(s.test.labels == std::vector<int64_t>{7});
  CHECK(s.test.lengths == std::vector<int64_t>{4});
  check_error([&] { load_listops_tsv(lra, 0); }, "seq_len must be >= 1");
}

// Not run by default: ./test_listops --no-skip -tc="listops: default-size benchmark"
TEST_CASE("listops: default-size benchmark" * doctest::skip()) {
  const ListOpsOptions o;
  const auto t0 = std::chrono::steady_clock::now();
  const Splits s = make_listops(o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<int64_t> counts(10, 0), lens = s.train.lengths;
  for (int64_t y : s.train.labels) ++counts[static_cast<size_t>(y)];
  std::sort(lens.begin(), lens.end());
  double mean = 0;
  for (int64_t l : lens) mean += static_cast<double>(l);
  mean /= static_cast<double>(lens.size());
  std::printf("make_listops(defaults): %.2f s for %lld examples\nlabels:", secs,
              static_cast<long long>(s.train.size() + s.val.size() + s.test.size()));
  for (int64_t c : counts) std::printf(" %lld", static_cast<long long>(c));
  std::printf("\nlengths: min %lld p10 %lld median %lld p90 %lld max %lld mean %.1f\n", static_cast<long long>(lens[0]),
              static_cast<long long>(lens[lens.size() / 10]), static_cast<long long>(lens[lens.size() / 2]),
              static_cast<long long>(lens[lens.size() * 9 / 10]), static_cast<long long>(lens.back()), mean);
  CHECK(s.train.size() == 96000);
}
