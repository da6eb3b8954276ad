#include "hkt/tasks/listops.hpp"

#include "listops_detail.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <unordered_set>

#include "hkt/core/error.hpp"
#include "hkt/core/random.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/progress.hpp"

namespace hkt::tasks {

namespace detail {

// A short excerpt of a (possibly very long) expression for error messages.
std::string excerpt(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string r;
  r.reserve(kMax + 32);
  r += '\'';
  r.append(s.data(), std::min(s.size(), kMax));
  if (s.size() <= kMax) {
    r += '\'';
  } else {
    r += " ...' (";
    r += std::to_string(s.size());
    r += " characters)";
  }
  return r;
}

Dataset listops_dataset(const std::string& name, int64_t seq_len) {
  Dataset d;
  d.name = name;
  d.seq_len = seq_len;
  d.vocab = listops_vocab();
  d.classes = 10;
  d.pad_id = kListOpsPad;
  return d;
}

}  // namespace detail

namespace {

using detail::excerpt;

constexpr std::array<std::string_view, 16> kNames = {"<pad>", "0", "1", "2",    "3",    "4",    "5",   "6",
                                                      "7",     "8", "9", "[MIN", "[MAX", "[MED", "[SM", "]"};
constexpr int64_t kVocab = 16;

bool is_op(int64_t id) { return id >= kListOpsMin && id <= kListOpsSm; }
bool is_digit(int64_t id) { return id >= kListOpsDigit0 && id < kListOpsDigit0 + 10; }

int64_t token_id(std::string_view tok) {
  if (tok.size() == 1 && tok[0] >= '0' && tok[0] <= '9') return kListOpsDigit0 + (tok[0] - '0');
  for (int64_t id = kListOpsMin; id <= kListOpsEnd; ++id)
    if (tok == kNames[static_cast<size_t>(id)]) return id;
  return -1;
}

// Splits on whitespace; drops "(" / ")" (counting their balance when
// `check_parens`); `pos` receives each id's index among all tokens.
std::vector<int64_t> scan(const std::string& expr, bool check_parens, std::vector<int64_t>* pos) {
  std::vector<int64_t> ids;
  int64_t depth = 0, index = 0;
  size_t i = 0;
  const size_t n = expr.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (i < n) {
    while (i < n && space(expr[i])) ++i;
    if (i >= n) break;
    size_t j = i;
    while (j < n && !space(expr[j])) ++j;
    const std::string_view tok(expr.data() + i, j - i);
    if (tok == "(") {
      ++depth;
    } else if (tok == ")") {
      HKT_CHECK(!check_parens || depth > 0, "listops: unbalanced ')' at token ", index, " in ", excerpt(expr));
      --depth;
    } else {
      const int64_t id = token_id(tok);
      HKT_CHECK(id >= 0, "listops: unknown token '", tok, "' at token ", index, " in ", excerpt(expr),
                " (expected a digit 0-9, [MIN, [MAX, [MED, [SM, ], ( or ))");
      ids.push_back(id);
      if (pos) pos->push_back(index);
    }
    ++index;
    i = j;
  }
  HKT_CHECK(!check_parens || depth == 0, "listops: unbalanced parentheses: ", depth, " '(' not closed in ",
            excerpt(expr));
  return ids;
}

// Evaluates ids with an explicit stack (no recursion). `where` describes the
// expression in errors; `pos` maps id indices to token indices (or null).
int64_t eval_ids(const std::vector<int64_t>& ids, const std::vector<int64_t>* pos, const std::string& where) {
  struct Frame {
    int64_t op;
    size_t start;  // first argument in `args`
    size_t at;     // index of the operator token
  };
  std::vector<Frame> stack;
  std::vector<int64_t> args, scratch;
  int64_t top = -1;
  auto at = [&](size_t i) { return pos ? (*pos)[i] : static_cast<int64_t>(i); };
  auto put = [&](int64_t v, size_t i) {
    if (!stack.empty()) {
      args.push_back(v);
      return;
    }
    HKT_CHECK(top < 0, "listops: more than one top-level item (token ", at(i), ") in ", where);
    top = v;
  };
  HKT_CHECK(!ids.empty(), "listops: empty expression ", where);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (is_digit(id)) {
      put(id - kListOpsDigit0, i);
    } else if (is_op(id)) {
      HKT_CHECK(!stack.empty() || top < 0, "listops: more than one top-level item (token ", at(i), ") in ", where);
      stack.push_back({id, args.size(), i});
    } else if (id == kListOpsEnd) {
      HKT_CHECK(!stack.empty(), "listops: ']' at token ", at(i), " closes no operator in ", where);
      const Frame f = stack.back();
      stack.pop_back();
      const size_t k = args.size() - f.start;
      HKT_CHECK(k > 0, "listops: operator ", kNames[static_cast<size_t>(f.op)], " at token ", at(f.at),
                " has no arguments in ", where);
      int64_t v = 0;
      auto b = args.begin() + static_cast<std::ptrdiff_t>(f.start);
      if (f.op == kListOpsMin) {
        v = *std::min_element(b, args.end());
      } else if (f.op == kListOpsMax) {
        v = *std::max_element(b, args.end());
      } else if (f.op == kListOpsSm) {
        for (auto it = b; it != args.end(); ++it) v += *it;
        v %= 10;
      } else {  // [MED: int(np.median(...)); values are >= 0, so truncation is floor division
        scratch.assign(b, args.end());
        std::sort(scratch.begin(), scratch.end());
        v = k % 2 ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2;
      }
      args.resize(f.start);
      put(v, i);
    } else {
      throw Error(str_cat("listops: invalid token id ", id, " at token ", at(i), " in ", where));
    }
  }
  HKT_CHECK(stack.empty(), "listops: operator ", kNames[static_cast<size_t>(stack.back().op)], " at token ",
            at(stack.back().at), " is never closed (missing ']') in ", where);
  HKT_CHECK(top >= 0, "listops: expression has no value in ", where);
  return top;
}

std::string describe_ids(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && s.size() < 80; ++i) {
    if (i) s += ' ';
    s += (ids[i] >= 0 && ids[i] < kVocab) ? std::string(kNames[static_cast<size_t>(ids[i])]) : "?";
  }
  if (s.size() >= 80) s += " ...";
  return "'" + s + "' (" + std::to_string(ids.size()) + " tokens)";
}

// Philox stream of one attempt: counters (block, tag | attempt), key seed.
class Draws {
 public:
  Draws(uint64_t seed, uint64_t attempt) : key_(seed), hi_(attempt ^ (uint64_t{0x4C6F7073} << 40)) {}
  uint32_t next() {
    if (used_ == 4) {
      buf_ = philox4x32(block_++, hi_, key_);
      used_ = 0;
    }
    return buf_[used_++];
  }
  // Uniform in [0, n) by multiply-shift (bias below n / 2^32).
  int64_t below(int64_t n) { return static_cast<int64_t>((uint64_t{next()} * static_cast<uint64_t>(n)) >> 32); }

 private:
  uint64_t key_, hi_, block_ = 0;
  std::array<uint32_t, 4> buf_{};
  int used_ = 4;
};

struct Grower {
  const ListOpsOptions& o;
  uint64_t op_threshold;  // a draw below it makes an operator
  Draws d;
  std::vector<int64_t>& out;
  int64_t max_len;        // the window's upper end
  // Appends one node at `depth`; false as soon as the tree exceeds max_len.
  bool grow(int64_t depth, bool root) {
    const bool op = root || (depth < o.max_depth && uint64_t{d.next()} < op_threshold);
    if (!op) {
      out.push_back(kListOpsDigit0 + d.below(10));
      return static_cast<int64_t>(out.size()) <= max_len;
    }
    out.push_back(kListOpsMin + d.below(4));
    const int64_t k = 2 + d.below(o.max_args - 1);
    for (int64_t i = 0; i < k; ++i)
      if (!grow(depth + 1, false)) return false;
    out.push_back(kListOpsEnd);
    return static_cast<int64_t>(out.size()) <= max_len;
  }
};

void check_options(const ListOpsOptions& o) {
  HKT_CHECK(o.train_size > 0 && o.val_size > 0 && o.test_size > 0, "listops: split sizes must be positive, got train ",
            o.train_size, ", val ", o.val_size, ", test ", o.test_size);
  HKT_CHECK(o.seq_len >= 4, "listops: seq_len must be >= 4 (the shortest expression, [OP a b ], has 4 tokens), got ",
            o.seq_len);
  HKT_CHECK(o.max_len >= 0 && o.max_len <= o.seq_len, "listops: max_len must be in [0, seq_len = ", o.seq_len,
            "] (0 = seq_len), got ", o.max_len);
  const int64_t hi = o.max_len > 0 ? o.max_len : o.seq_len;
  HKT_CHECK(hi >= 4, "listops: max_len must be >= 4 (the shortest expression, [OP a b ], has 4 tokens), got ", hi);
  HKT_CHECK(o.min_len >= 0 && o.min_len <= hi, "listops: min_len must be in [0, max_len = ", hi, "], got ",
            o.min_len);
  HKT_CHECK(o.max_depth >= 2 && o.max_depth <= 10000, "listops: max_depth must be in [2, 10000], got ", o.max_depth);
  HKT_CHECK(o.max_args >= 2 && o.max_args <= 1000000, "listops: max_args must be in [2, 1e6], got ", o.max_args);
  HKT_CHECK(o.op_prob >= 0.0 && o.op_prob <= 1.0, "listops: op_prob must be in [0, 1], got ", o.op_prob);
}

std::vector<int64_t> generate_unchecked(const ListOpsOptions& o, uint64_t attempt) {
  std::vector<int64_t> out;
  out.reserve(64);
  Grower g{o, static_cast<uint64_t>(o.op_prob * 4294967296.0), Draws(o.seed, attempt), out,
           o.max_len > 0 ? o.max_len : o.seq_len};
  if (!g.grow(1, true) || static_cast<int64_t>(out.size()) < o.min_len) out.clear();
  return out;
}

// All examples (train, then val, then test), distinct, in attempt order.
std::vector<std::vector<int64_t>> generate_all(const ListOpsOptions& o) {
  check_options(o);
  const int64_t total = o.train_size + o.val_size + o.test_size;
  std::vector<std::vector<int64_t>> res;
  res.reserve(static_cast<size_t>(total));
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<size_t>(total) * 2);
  const uint64_t stale_limit = std::max<uint64_t>(1000000, 100 * static_cast<uint64_t>(total));
  uint64_t attempt = 0, last_new = 0;
  std::string key;
  Progress progress("listops: generating", total);
  while (static_cast<int64_t>(res.size()) < total) {
    HKT_CHECK(attempt - last_new < stale_limit, "listops: only ", res.size(), " of ", total,
              " distinct expressions found after ", attempt, " attempts (none new in the last ", stale_limit,
              "); the length window [", o.min_len, ", ", o.max_len > 0 ? o.max_len : o.seq_len, "] with max_depth ", o.max_depth, ", max_args ",
              o.max_args, ", op_prob ", o.op_prob, " admits too few; widen it or ask for fewer examples");
    std::vector<int64_t> ids = generate_unchecked(o, attempt++);
    if (ids.empty()) continue;
    key.assign(ids.size(), '\0');
    for (size_t i = 0; i < ids.size(); ++i) key[i] = static_cast<char>(ids[i]);
    if (!seen.insert(key).second) continue;
    last_new = attempt;
    res.push_back(std::move(ids));
    progress.set(static_cast<int64_t>(res.size()));
  }
  return res;
}



}  // namespace

int64_t listops_vocab() { return kVocab; }

std::string listops_token_name(int64_t id) {
  HKT_CHECK(id >= 0 && id < kVocab, "listops: token id ", id, " outside [0, ", kVocab, ")");
  return std::string(kNames[static_cast<size_t>(id)]);
}

std::vector<int64_t> tokenize_listops(const std::string& expr) { return scan(expr, false, nullptr); }

int64_t evaluate_listops(const std::string& expr) {
  std::vector<int64_t> pos;
  const std::vector<int64_t> ids = scan(expr, true, &pos);
  return eval_ids(ids, &pos, excerpt(expr));
}

int64_t evaluate_listops_ids(const std::vector<int64_t>& ids) { return eval_ids(ids, nullptr, describe_ids(ids)); }

std::string listops_to_expression(const std::vector<int64_t>& ids) {
  evaluate_listops_ids(ids);  // well-formed, or an error
  // Argument count of each operator, then LRA's to_string: an operator with k
  // arguments opens k + 1 "(", each argument is followed by ")", and "]" by ")".
  std::vector<int64_t> nargs(ids.size(), 0);
  std::vector<size_t> open;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!open.empty() && ids[i] != kListOpsEnd) ++nargs[open.back()];
    if (is_op(ids[i])) open.push_back(i);
    else if (ids[i] == kListOpsEnd) open.pop_back();
  }
  std::string s;
  s.reserve(ids.size() * 6);
  auto put = [&](std::string_view t) {
    if (!s.empty()) s += ' ';
    s += t;
  };
  std::vector<size_t> stack;
  auto close_arg = [&]() {
    if (!stack.empty()) put(")");
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (is_op(id)) {
      for (int64_t j = 0; j <= nargs[i]; ++j) put("(");
      put(kNames[static_cast<size_t>(id)]);
      stack.push_back(i);
    } else if (id == kListOpsEnd) {
      put("]");
      put(")");
      stack.pop_back();
      close_arg();
    } else {
      put(kNames[static_cast<size_t>(id)]);
      close_arg();
    }
  }
  return s;
}

std::vector<int64_t> generate_listops_ids(const ListOpsOptions& opt, uint64_t attempt) {
  check_options(opt);
  return generate_unchecked(opt, attempt);
}

std::string generate_listops_expression(const ListOpsOptions& opt, uint64_t attempt) {
  const std::vector<int64_t> ids = generate_listops_ids(opt, attempt);
  return ids.empty() ? std::string() : listops_to_expression(ids);
}

ListOpsSplitRows generate_listops(const ListOpsOptions& opt) {
  const std::vector<std::vector<int64_t>> all = generate_all(opt);
  ListOpsSplitRows r;
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i);
    ListOpsRows& dst = n < opt.train_size ? r.train : n < opt.train_size + opt.val_size ? r.val : r.test;
    dst.emplace_back(listops_to_expression(all[i]), evaluate_listops_ids(all[i]));
  }
  return r;
}

Splits make_listops(const ListOpsOptions& opt) {
  const std::vector<std::vector<int64_t>> all = generate_all(opt);
  Splits s{detail::listops_dataset("listops/train", opt.seq_len), detail::listops_dataset("listops/val", opt.seq_len),
           detail::listops_dataset("listops/test", opt.seq_len), {}};
  s.train.tokens.reserve(static_cast<size_t>(opt.train_size * opt.seq_len));
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i);
    Dataset& dst = n < opt.train_size ? s.train : n < opt.train_size + opt.val_size ? s.val : s.test;
    dst.add_tokens(all[i], evaluate_listops_ids(all[i]));
  }
  s.train.validate();
  s.val.validate();
  s.test.validate();
  return s;
}


}  // namespace hkt::tasks
