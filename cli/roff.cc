#include "cli/roff.h"

namespace corral::cli::roff {
namespace {

void put(std::string& out, char c) {
  if (c == '\\') {
    out += "\\e";
  } else if (c == '-') {
    out += "\\-";
  } else {
    out += c;
  }
}

// A line starting with '.' or '\'' would be read as a request: \& before it prints nothing.
std::string guard(std::string text) {
  size_t start = 0;
  while (start < text.size()) {
    if (text[start] == '.' || text[start] == '\'') text.insert(start, "\\&");
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return text;
}

// The end of a [text](link) starting at `i`, or npos when it is not one.
size_t link_end(std::string_view line, size_t i, std::string_view& text) {
  const size_t close = line.find("](", i);
  if (close == std::string_view::npos) return std::string_view::npos;
  const size_t end = line.find(')', close);
  if (end == std::string_view::npos) return std::string_view::npos;
  text = line.substr(i + 1, close - i - 1);
  return end;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) put(out, c);
  return guard(std::move(out));
}

std::string from_markdown(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const bool strong = line.substr(i, 2) == "**";
    if (c == '`' || strong || (c == '*' && i + 1 < line.size() && line[i + 1] != ' ')) {
      const std::string_view mark = strong ? "**" : line.substr(i, 1);
      const size_t end = line.find(mark, i + mark.size());
      if (end != std::string_view::npos) {
        const std::string_view inner = line.substr(i + mark.size(), end - i - mark.size());
        out += c == '*' && !strong ? "\\fI" : "\\fB";
        for (char k : inner) put(out, k);
        out += "\\fR";
        i = end + mark.size() - 1;
        continue;
      }
    }
    std::string_view text;
    if (c == '[') {
      const size_t end = link_end(line, i, text);
      if (end != std::string_view::npos) {
        out += from_markdown(text);
        i = end;
        continue;
      }
    }
    put(out, c);
  }
  return guard(std::move(out));
}

}  // namespace corral::cli::roff
