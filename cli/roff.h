// Text for man pages: roff's escapes, and the inline Markdown of corral's docs (`code`,
// **strong**, [text](link)) turned into roff's fonts.
#pragma once

#include <string>
#include <string_view>

namespace corral::cli::roff {

// `text` as roff prints it literally: backslashes escaped, a line that would start with '.' or
// '\'' (a request) guarded, '-' as a hyphen-minus (\-) so that options can be copied.
std::string escape(std::string_view text);

// One line of Markdown: `code` in bold, **strong** in bold, *em* in italics, a link as its text;
// the rest escaped as escape() does.
std::string from_markdown(std::string_view line);

}  // namespace corral::cli::roff
