// The op profiler (hkt/core/profiler.hpp): a thread-local stack of open
// scopes for self times, and one table of entries under a mutex.
#include "hkt/core/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

namespace hkt::profiler {
namespace {

std::atomic<bool> g_on{false};
thread_local Scope* t_top = nullptr;

struct Table {
  std::mutex mu;
  std::map<std::string, Entry> by_name;
};
Table& table_() {
  static Table t;
  return t;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string fmt(double x, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, x);
  return b;
}

// HKT_PROFILE=1: on from the start, the table on stderr at exit.
[[maybe_unused]] const bool g_from_env = [] {
  const char* v = std::getenv("HKT_PROFILE");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return false;
  table_();  // constructed before the handler is registered, so destroyed after it runs
  std::atexit([] {
    const std::string t = table(40);
    std::fprintf(stderr, "\nhkt profiler (HKT_PROFILE), wall time per op on the calling thread:\n\n%s", t.c_str());
  });
  g_on.store(true, std::memory_order_relaxed);
  return true;
}();

}  // namespace

void enable(bool on) { g_on.store(on, std::memory_order_relaxed); }
bool enabled() { return g_on.load(std::memory_order_relaxed); }

void reset() {
  Table& t = table_();
  std::lock_guard<std::mutex> lock(t.mu);
  t.by_name.clear();
}

std::vector<Entry> entries() {
  Table& t = table_();
  std::vector<Entry> out;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    for (const auto& [name, e] : t.by_name) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.self_s > b.self_s; });
  return out;
}

// work / seconds in units of 1e9, or "-" when nothing was counted.
std::string rate(double work, double s) { return work > 0 && s > 0 ? fmt(work / s / 1e9, 1) : "-"; }

std::string table(size_t top) {
  const std::vector<Entry> es = entries();
  double sum = 0, flops = 0, bytes = 0;
  for (const Entry& e : es) sum += e.self_s, flops += e.flops, bytes += e.bytes;
  std::ostringstream o;
  o << "| op | calls | self ms | total ms | self % | GFLOP | GFLOP/s | GB | GB/s |\n"
       "|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  const size_t n = top == 0 ? es.size() : std::min(top, es.size());
  for (size_t i = 0; i < n; ++i) {
    const Entry& e = es[i];
    o << "| " << e.name << " | " << e.calls << " | " << fmt(1e3 * e.self_s, 2) << " | " << fmt(1e3 * e.total_s, 2)
      << " | " << fmt(sum > 0 ? 100 * e.self_s / sum : 0.0, 1) << " | "
      << (e.flops > 0 ? fmt(e.flops / 1e9, 3) : "-") << " | " << rate(e.flops, e.self_s) << " | "
      << (e.bytes > 0 ? fmt(e.bytes / 1e9, 3) : "-") << " | " << rate(e.bytes, e.self_s) << " |\n";
  }
  if (n < es.size()) {
    double rest = 0, rest_flops = 0, rest_bytes = 0;
    int64_t calls = 0;
    for (size_t i = n; i < es.size(); ++i)
      rest += es[i].self_s, calls += es[i].calls, rest_flops += es[i].flops, rest_bytes += es[i].bytes;
    o << "| (" << es.size() - n << " more) | " << calls << " | " << fmt(1e3 * rest, 2) << " | | "
      << fmt(sum > 0 ? 100 * rest / sum : 0.0, 1) << " | " << (rest_flops > 0 ? fmt(rest_flops / 1e9, 3) : "-")
      << " | " << rate(rest_flops, rest) << " | " << (rest_bytes > 0 ? fmt(rest_bytes / 1e9, 3) : "-") << " | "
      << rate(rest_bytes, rest) << " |\n";
  }
  o << "| **all** | | " << fmt(1e3 * sum, 2) << " | | 100.0 | " << fmt(flops / 1e9, 3) << " | "
    << rate(flops, sum) << " | " << fmt(bytes / 1e9, 3) << " | " << rate(bytes, sum) << " |\n";
  return o.str();
}

void count(double flops, double bytes) {
  Scope* s = t_top;
  if (s == nullptr || !enabled()) return;
  s->flops_ += flops;
  s->bytes_ += bytes;
}

Scope::Scope(const char* kind, const char* name) : kind_(kind), name_(name), on_(enabled()) {
  if (!on_) return;
  parent_ = t_top;
  t_top = this;
  start_ = now_s();
}

Scope::~Scope() {
  if (!on_) return;
  const double total = now_s() - start_;
  t_top = parent_;
  if (parent_ != nullptr) parent_->child_ += total;
  std::string key = std::string(kind_) + " " + name_;
  Table& t = table_();
  std::lock_guard<std::mutex> lock(t.mu);
  Entry& e = t.by_name[key];
  if (e.calls == 0) e.name = std::move(key);
  ++e.calls;
  e.total_s += total;
  e.self_s += total - child_;
  e.flops += flops_;
  e.bytes += bytes_;
}

}  // namespace hkt::profiler
