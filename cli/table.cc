#include "cli/table.h"

#include <algorithm>

namespace corral::cli {
namespace {

// The glyphs of one style: corners and junctions of the top, middle and bottom rules.
struct Glyphs {
  const char* horizontal;
  const char* vertical;
  const char* top[3];  // left, junction, right
  const char* middle[3];
  const char* bottom[3];
};

constexpr Glyphs kBox{"─", "│", {"┌", "┬", "┐"}, {"├", "┼", "┤"}, {"└", "┴", "┘"}};
constexpr Glyphs kAscii{"-", "|", {"+", "+", "+"}, {"+", "+", "+"}, {"+", "+", "+"}};

std::string rule(const std::vector<size_t>& widths, const Glyphs& g, const char* const ends[3]) {
  std::string out = ends[0];
  for (size_t i = 0; i < widths.size(); ++i) {
    for (size_t k = 0; k < widths[i] + 2; ++k) out += g.horizontal;
    out += i + 1 < widths.size() ? ends[1] : ends[2];
  }
  return out + "\n";
}

std::string line(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                 const Glyphs& g) {
  std::string out = g.vertical;
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string cell = i < cells.size() ? cells[i] : "";
    out += " " + cell + std::string(widths[i] - display_width(cell), ' ') + " " + g.vertical;
  }
  return out + "\n";
}

}  // namespace

size_t display_width(const std::string& text) {
  // Count the bytes that start a code point, i.e. all but UTF-8 continuation bytes.
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows, TableStyle style) {
  const Glyphs& g = style == TableStyle::kBox ? kBox : kAscii;
  std::vector<size_t> widths;
  for (const std::string& h : header) widths.push_back(display_width(h));
  for (const auto& row : rows) {
    for (size_t i = 0; i < widths.size() && i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::string out = rule(widths, g, g.top);
  out += line(header, widths, g);
  out += rule(widths, g, g.middle);
  for (const auto& row : rows) out += line(row, widths, g);
  out += rule(widths, g, g.bottom);
  return out;
}

}  // namespace corral::cli
