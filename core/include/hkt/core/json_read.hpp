// Reading JSON that a user (or a damaged file) hands to hkt: configs, run
// folders' files, experiment files, checkpoint metadata. Every reader parses
// through read_json(), so that hostile text is refused the same way
// everywhere: a size limit, a nesting-depth limit checked on the raw text
// before the parser builds anything, and error messages that quote at most a
// short excerpt of the text.
//
//   const auto j = hkt::read_json<nlohmann::json>(text, "runs/x/config.json");
//
// (The template takes the JSON type so that this header needs no JSON library.)
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "hkt/core/error.hpp"

namespace hkt {

struct JsonLimits {
  size_t max_bytes = size_t{64} << 20;  // 64 MiB
  int max_depth = 64;                   // nested objects and arrays
};

// Throws hkt::Error("<what>: ...") when text is longer than limits.max_bytes,
// or nests objects and arrays deeper than limits.max_depth (counted outside
// strings; the message gives the byte offset). Allocates nothing.
void check_json_text(std::string_view text, const std::string& what, const JsonLimits& limits = {});

// At most max_chars characters of text (control characters shown as '?'),
// with "... (N bytes)" appended when it was cut: for quoting a value in an
// error message.
std::string excerpt(std::string_view text, size_t max_chars = 80);

// check_json_text(), then Json::parse (nlohmann::json or ordered_json); a
// syntax error becomes hkt::Error("<what>: invalid JSON: <excerpt of the
// parser's message>").
template <class Json>
Json read_json(std::string_view text, const std::string& what, const JsonLimits& limits = {}) {
  check_json_text(text, what, limits);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const typename Json::exception& e) {
    throw Error(what + ": invalid JSON: " + excerpt(e.what(), 240));
  }
}

}  // namespace hkt
