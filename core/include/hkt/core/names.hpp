// Closest-name suggestions for messages about a mistyped name (an option, a task,
// a preset): "unknown task 'synthtic'; did you mean 'synthetic'?".
#pragma once
#include <string>
#include <vector>

namespace hkt {

// The name of `known` closest to `name` in edit distance (insertions, deletions,
// substitutions and swaps of neighbours, case-insensitive, '_' counted as '-'), if
// it is close enough to be a typo: at most a third of the longer name's length (at
// least 1), or `known` starting with `name` (an abbreviation); else "".
std::string closest_name(const std::string& name, const std::vector<std::string>& known);

// "; did you mean 'X'?" with X = closest_name(name, known), or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

}  // namespace hkt
