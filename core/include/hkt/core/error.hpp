// hkt::Error and the checking macros used across the framework.
// Every user-facing failure (shape, dtype, device, file) throws hkt::Error with
// a message that names the op or file, what was expected and what was found.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace hkt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
inline void cat_into(std::ostringstream&) {}
template <class A, class... R>
void cat_into(std::ostringstream& os, const A& a, const R&... r) {
  os << a;
  cat_into(os, r...);
}
}  // namespace detail

// Concatenate any streamable values into a string.
template <class... A>
std::string str_cat(const A&... a) {
  std::ostringstream os;
  detail::cat_into(os, a...);
  return os.str();
}

}  // namespace hkt

// HKT_CHECK(cond, "op", parts...): throws hkt::Error("op: parts...") if !cond.
#define HKT_CHECK(cond, ...)                                   \
  do {                                                         \
    if (!(cond)) throw ::hkt::Error(::hkt::str_cat(__VA_ARGS__)); \
  } while (0)
