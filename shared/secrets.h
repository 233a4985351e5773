// Secrets: values a scenario uses through `{{secret.NAME}}` that must never be stored or
// shown. Workers expand them into requests; everything that leaves a worker (events,
// checkpoints, logs) has them masked first, so the master, the journal, the API and reports
// never see a value.
//
// Two masks exist. redact() replaces every occurrence of a value with "***", for text that is
// only ever shown (failure reasons, logs). mask() replaces it with a "{{secret.NAME}}" marker
// and names the secrets it masked, so that unmask() can restore the exact text: captured
// variables go to the master this way and come back intact when an instance resumes.
//
// Immutable once built; any thread may read it at once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace corral {

class Secrets {
 public:
  // Adds or replaces a secret. Empty values are ignored: they would mask nothing sensibly.
  void add(const std::string& name, std::string value);
  // The value of `name`, or nullptr.
  const std::string* find(std::string_view name) const;
  bool empty() const { return values_.empty(); }
  std::vector<std::string> names() const;
  const std::map<std::string, std::string, std::less<>>& all() const { return values_; }

  // `text` with every occurrence of every value replaced by "***".
  std::string redact(std::string_view text) const;
  // The start of `text` to show (a failed step's response): redacted first, over enough of it
  // that a value the cut would split is masked whole; then at most `max_bytes` of printable text
  // (text::printable_prefix), with "…" (text::kEllipsis) after it when some was left out.
  std::string excerpt(std::string_view text, size_t max_bytes) const;
  // `text` with every occurrence of a value replaced by "{{secret.NAME}}"; the names of the
  // secrets masked are added to `masked` (once each). Longer values are masked first, so a
  // value that contains another is masked whole.
  std::string mask(std::string_view text, std::vector<std::string>& masked) const;
  // The inverse of mask(), for the markers of the secrets in `names` only: a marker of any
  // other secret that happens to be in the text stays as it is.
  std::string unmask(std::string_view text, const std::vector<std::string>& names) const;

  // The marker mask() writes for `name`.
  static std::string marker(std::string_view name);

 private:
  std::string replace_all(std::string_view text, bool with_markers,
                          std::vector<std::string>* masked) const;
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace corral
