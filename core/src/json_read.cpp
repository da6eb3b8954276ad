#include "hkt/core/json_read.hpp"

namespace hkt {

void check_json_text(std::string_view text, const std::string& what, const JsonLimits& limits) {
  HKT_CHECK(text.size() <= limits.max_bytes, what, ": the JSON text is ", text.size(), " bytes, more than the limit of ",
            limits.max_bytes);
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      HKT_CHECK(++depth <= limits.max_depth, what, ": the JSON is nested more than ", limits.max_depth,
                " levels deep (at byte ", i, ")");
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
}

std::string excerpt(std::string_view text, size_t max_chars) {
  std::string out;
  const size_t n = text.size() < max_chars ? text.size() : max_chars;
  out.reserve(n + 32);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  if (n < text.size()) out += str_cat("... (", text.size(), " bytes)");
  return out;
}

}  // namespace hkt
