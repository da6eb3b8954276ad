// Closest-name suggestions (hkt/core/names.hpp).
#include "hkt/core/names.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace hkt {
namespace {

std::string fold(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance (Levenshtein with swaps of neighbours).
size_t distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& known) {
  const std::string f = fold(name);
  std::string best;
  size_t best_d = 0;
  for (const std::string& k : known) {
    const std::string g = fold(k);
    if (g == f) return k;
    const size_t limit = std::max<size_t>(1, std::max(f.size(), g.size()) / 3);
    size_t d = distance(f, g);
    // An abbreviation ("--eval" for "--eval-every") counts as close, behind any typo.
    if (d > limit && f.size() >= 3 && g.compare(0, f.size(), f) == 0) d = limit + (g.size() - f.size());
    else if (d > limit) continue;
    if (best.empty() || d < best_d) best = k, best_d = d;
  }
  return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  const std::string c = closest_name(name, known);
  return c.empty() ? std::string() : "; did you mean '" + c + "'?";
}

}  // namespace hkt
