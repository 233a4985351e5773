// A text table with a header row, drawn with box-drawing characters (like `pm2 ls`) or with
// plain ASCII (+ - |) for pipes and dumb terminals. Pure function; any thread.
#pragma once

#include <string>
#include <vector>

namespace corral::cli {

enum class TableStyle { kBox, kAscii };

// Every row should have header.size() cells; missing cells print empty, extra ones are dropped.
// Cells are left-aligned; widths count UTF-8 code points. The result ends with a newline.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows, TableStyle style);

// The number of UTF-8 code points in `text` (its width for the characters corral prints).
size_t display_width(const std::string& text);

}  // namespace corral::cli
