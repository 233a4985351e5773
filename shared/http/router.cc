#include "shared/http/router.h"

namespace corral::http {
namespace {

// The next non-empty segment of `path`, removed from it; "" when none is left.
std::string_view next_segment(std::string_view& path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  size_t end = path.find('/');
  std::string_view segment = path.substr(0, end);
  path.remove_prefix(end == std::string_view::npos ? path.size() : end);
  return segment;
}

bool is_parameter(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

std::optional<std::vector<std::string>> match_path(std::string_view pattern,
                                                   std::string_view path) {
  std::vector<std::string> args;
  for (;;) {
    std::string_view want = next_segment(pattern);
    std::string_view got = next_segment(path);
    if (want.empty() || got.empty()) {
      if (!want.empty() || !got.empty()) return std::nullopt;
      return args;
    }
    if (is_parameter(want)) {
      args.emplace_back(got);
    } else if (want != got) {
      return std::nullopt;
    }
  }
}

}  // namespace corral::http
