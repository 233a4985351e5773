#include "shared/secrets.h"

#include <algorithm>

#include "shared/text/utf8.h"

namespace corral {

void Secrets::add(const std::string& name, std::string value) {
  if (value.empty()) return;
  values_[name] = std::move(value);
}

const std::string* Secrets::find(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::vector<std::string> Secrets::names() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : values_) out.push_back(name);
  return out;
}

std::string Secrets::marker(std::string_view name) {
  return "{{secret." + std::string(name) + "}}";
}

std::string Secrets::redact(std::string_view text) const {
  return replace_all(text, false, nullptr);
}

std::string Secrets::excerpt(std::string_view text, size_t max_bytes) const {
  size_t longest = 0;
  for (const auto& [name, value] : values_) longest = std::max(longest, value.size());
  std::string_view start = text.substr(0, max_bytes + longest);
  bool cut = false;
  std::string out = text::printable_prefix(redact(start), max_bytes, &cut);
  if (cut || start.size() < text.size()) out += text::kEllipsis;
  return out;
}

std::string Secrets::mask(std::string_view text, std::vector<std::string>& masked) const {
  return replace_all(text, true, &masked);
}

// Left to right: the next occurrence of any value is replaced, the longest value winning
// where two start at the same place. Each value's next occurrence is found with find(), so a
// long text costs one scan per secret.
std::string Secrets::replace_all(std::string_view text, bool with_markers,
                                 std::vector<std::string>* masked) const {
  if (values_.empty()) return std::string(text);
  struct Next {
    const std::string* name;
    const std::string* value;
    size_t at;
  };
  std::vector<Next> next;
  for (const auto& [name, value] : values_) next.push_back({&name, &value, text.find(value)});
  std::string out;
  size_t i = 0;
  for (;;) {
    const Next* hit = nullptr;
    for (Next& n : next) {
      if (n.at != std::string_view::npos && n.at < i) n.at = text.find(*n.value, i);
      if (n.at == std::string_view::npos) continue;
      if (hit == nullptr || n.at < hit->at ||
          (n.at == hit->at && n.value->size() > hit->value->size())) {
        hit = &n;
      }
    }
    if (hit == nullptr) break;
    out.append(text.substr(i, hit->at - i));
    out += with_markers ? marker(*hit->name) : "***";
    if (masked && std::find(masked->begin(), masked->end(), *hit->name) == masked->end()) {
      masked->push_back(*hit->name);
    }
    i = hit->at + hit->value->size();
  }
  out.append(text.substr(i));
  return out;
}

std::string Secrets::unmask(std::string_view text, const std::vector<std::string>& names) const {
  std::string out(text);
  for (const std::string& name : names) {
    const std::string* value = find(name);
    if (value == nullptr) continue;
    std::string m = marker(name);
    for (size_t at = out.find(m); at != std::string::npos; at = out.find(m, at + value->size())) {
      out.replace(at, m.size(), *value);
    }
  }
  return out;
}

}  // namespace corral
