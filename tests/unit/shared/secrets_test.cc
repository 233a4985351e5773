// Secrets: redaction, and the excerpt of a response a failed step's record keeps.
#include <catch2/catch.hpp>

#include "shared/secrets.h"
#include "shared/text/utf8.h"

using corral::Secrets;

namespace {

Secrets token(const std::string& value) {
  Secrets s;
  s.add("TOKEN", value);
  return s;
}

}  // namespace

TEST_CASE("secrets: redact masks every occurrence, the longest value first") {
  Secrets s;
  s.add("SHORT", "abc");
  s.add("LONG", "abcdef");
  CHECK(s.redact("x abcdef y abc z") == "x *** y *** z");
  CHECK(Secrets().redact("abc") == "abc");
}

TEST_CASE("secrets: an excerpt is the start of a text, redacted, with an ellipsis when cut") {
  const std::string ellipsis(corral::text::kEllipsis);
  Secrets none;
  CHECK(none.excerpt("{\"ok\": false}", 512) == "{\"ok\": false}");
  CHECK(none.excerpt("", 512).empty());
  CHECK(none.excerpt(std::string(512, 'x'), 512) == std::string(512, 'x'));
  CHECK(none.excerpt(std::string(513, 'x'), 512) == std::string(512, 'x') + ellipsis);
  // Bytes that are no text, and controls, show as U+FFFD.
  CHECK(none.excerpt("a\x1b[31mb\xff", 512) == "a\xEF\xBF\xBD[31mb\xEF\xBF\xBD");
  // A secret anywhere in the excerpt is masked.
  CHECK(token("s3cr3t").excerpt("{\"token\": \"s3cr3t\"}", 512) == "{\"token\": \"***\"}");
  // A secret the cut would split is masked whole, not shown in part: "s3c" is not in the text.
  const std::string padded = std::string(10, '.') + "s3cr3t" + std::string(20, '.');
  CHECK(token("s3cr3t").excerpt(padded, 13) == std::string(10, '.') + "***" + ellipsis);
  CHECK(token("s3cr3t").excerpt(padded, 12) == std::string(10, '.') + "**" + ellipsis);
  for (size_t max = 0; max < padded.size(); ++max) {
    INFO(max);
    CHECK(token("s3cr3t").excerpt(padded, max).find("s3") == std::string::npos);
  }
}
