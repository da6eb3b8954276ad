// ListOps (Nangia & Bowman 2018), as used by the Long Range Arena (Tay et al.
// 2020): nested list operations over the digits 0-9, e.g.
//   [MAX 2 9 [MIN 4 7 ] 0 ]            -> 9
//   [SM 5 6 [MED 1 2 3 4 ] ]           -> (5 + 6 + 2) % 10 = 3
// The label is the value of the expression (10 classes).
//
// Operators: [MIN, [MAX, [MED (integer median, as LRA's int(np.median(..)):
// for an even count the mean of the two middle values, truncated), [SM (sum
// modulo 10). An operator is closed by "]".
//
// Text form: LRA writes each tree node as "( left right )" (see
// lra_benchmarks/data/listops.py, to_string), e.g. [MAX 2 9 ] is written
//   ( ( ( [MAX 2 ) 9 ) ] )
// The tokenizer drops "(" and ")", so only the 15 symbols below reach a model.
//
// Vocabulary (16 ids):
//   0        padding
//   1 .. 10  the digits 0 .. 9      (id = digit + 1)
//   11       [MIN
//   12       [MAX
//   13       [MED
//   14       [SM
//   15       ]
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hkt/tasks/dataset.hpp"

namespace hkt::tasks {

struct ListOpsOptions {
  int64_t train_size = 96000, val_size = 2000, test_size = 2000;
  int64_t seq_len = 512;  // T: the model length; generated sequences fit in it (token count <= T)
  // Length window [min_len, max_len] of the token count (LRA's min_length /
  // max_length, which were 500 and 2000 at T = 2000). min_len = 0: no minimum;
  // max_len = 0: seq_len. max_len <= seq_len.
  int64_t min_len = 0;
  int64_t max_len = 0;
  int64_t max_depth = 10, max_args = 10;
  double op_prob = 0.25;  // probability that a non-root node above max_depth is an operator
  uint64_t seed = 0;
};

// Token ids (see the table above).
inline constexpr int64_t kListOpsPad = 0;
inline constexpr int64_t kListOpsDigit0 = 1;  // digit d has id d + 1
inline constexpr int64_t kListOpsMin = 11, kListOpsMax = 12, kListOpsMed = 13, kListOpsSm = 14, kListOpsEnd = 15;

int64_t listops_vocab();  // 16
// The text of a token id ("7", "[MAX", "]", "<pad>" for 0); error outside [0, 16).
std::string listops_token_name(int64_t id);

// Whitespace-separated tokens to ids; "(" and ")" are dropped. An unknown
// token is an hkt::Error naming it and its position.
std::vector<int64_t> tokenize_listops(const std::string& expr);

// The value (0-9) of an expression, with or without LRA's parentheses. An
// expression that does not parse is an hkt::Error saying why: empty,
// unknown token, unbalanced "(" / ")", "]" without an operator, an operator
// never closed, an operator without arguments, several top-level items.
int64_t evaluate_listops(const std::string& expr);
int64_t evaluate_listops_ids(const std::vector<int64_t>& ids);  // same, on token ids (no parentheses)

// Token ids (a well-formed expression) to LRA's parenthesised text.
std::string listops_to_expression(const std::vector<int64_t>& ids);

// Generation, following LRA's generate_tree: a node at depth < max_depth is an
// operator with probability op_prob (else a uniform digit); an operator draws
// a uniform argument count in [2, max_args] and a uniform operator; nodes at
// max_depth are digits, so a tree has at most max_depth levels. One deviation:
// the root is always an operator (LRA's root may be a lone digit, which its
// min_length filter removed anyway), so every example is a real list op.
//
// Attempt `attempt` of the stream for `opt.seed` draws its random numbers from
// Philox counters (attempt, draw index) with key seed, so it depends on
// nothing else. Returns the tree's token ids, or an empty vector when the tree
// exceeds the window's max_len tokens (generation stops as soon as it does)
// or has fewer than opt.min_len.
std::vector<int64_t> generate_listops_ids(const ListOpsOptions& opt, uint64_t attempt);
// The same attempt in LRA's parenthesised text ("" when rejected).
std::string generate_listops_expression(const ListOpsOptions& opt, uint64_t attempt);

using ListOpsRows = std::vector<std::pair<std::string, int64_t>>;  // (expression, target)
struct ListOpsSplitRows {
  ListOpsRows train, val, test;
};

// Runs attempts 0, 1, 2, ... and keeps accepted trees that were not seen
// before (duplicates removed across all splits), until train + val + test
// examples are found; the first train_size go to train, the next val_size to
// val, the rest to test. Deterministic for a given options struct. Errors on
// invalid options, or when the length window / limits admit too few distinct
// expressions (it gives up after a bounded number of attempts).
ListOpsSplitRows generate_listops(const ListOpsOptions& opt);
// The same data as Splits ("listops/train", "listops/val", "listops/test";
// vocab 16, pad 0, classes 10, lengths = token counts, T = opt.seq_len).
Splits make_listops(const ListOpsOptions& opt);

// LRA's TSV layout: a header "Source\tTarget", then "expression\ttarget" per
// line. Written atomically (to path + ".tmp", then renamed).
void write_listops_tsv(const std::string& path, const std::vector<std::pair<std::string, int64_t>>& rows);
// Reads and checks such a file (also "\r\n" line ends; blank lines skipped).
// Errors name the file and line: missing file, bad header, a line without a
// tab, a target that is not 0-9, an expression that does not parse or whose
// value differs from its target, no examples.
std::vector<std::pair<std::string, int64_t>> read_listops_tsv(const std::string& path);

// LRA's files in `dir`: basic_train.tsv, basic_val.tsv, basic_test.tsv. An
// expression longer than seq_len tokens is an error naming file and line (not
// truncated). Also writes them: write_listops_dir(dir, generate_listops(opt))
// gives files that load back to make_listops(opt).
Splits load_listops_tsv(const std::string& dir, int64_t seq_len);
void write_listops_dir(const std::string& dir, const ListOpsSplitRows& rows);

}  // namespace hkt::tasks
