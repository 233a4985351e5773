#include "shared/ipc/vars.h"

#include "shared/text/utf8.h"

namespace corral::ipc {
namespace {

using nlohmann::json;

constexpr const char* kSecretsKey = "$secrets";
constexpr const char* kBytesKey = "$bytes";

// Masks every text inside `value` (object keys are left alone).
void mask_texts(json& value, const Secrets& secrets, std::vector<std::string>& masked) {
  if (value.is_string()) {
    value = secrets.mask(value.get_ref<const std::string&>(), masked);
  } else if (value.is_structured()) {
    for (auto& child : value) mask_texts(child, secrets, masked);
  }
}

void unmask_texts(json& value, const Secrets& secrets, const std::vector<std::string>& names) {
  if (value.is_string()) {
    value = secrets.unmask(value.get_ref<const std::string&>(), names);
  } else if (value.is_structured()) {
    for (auto& child : value) unmask_texts(child, secrets, names);
  }
}

// Texts with a "{{secret.X}}" marker read "***" (the marker's whole span).
void hide_markers(json& value) {
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    std::string out;
    size_t i = 0;
    for (size_t at = text.find("{{secret."); at != std::string::npos;
         at = text.find("{{secret.", i)) {
      size_t end = text.find("}}", at);
      if (end == std::string::npos) break;
      out.append(text, i, at - i);
      out += "***";
      i = end + 2;
    }
    out.append(text, i);
    value = std::move(out);
  } else if (value.is_structured()) {
    for (auto& child : value) hide_markers(child);
  }
}

}  // namespace

json vars_to_wire(const json& vars, const Secrets& secrets) {
  json wire = json::object();
  if (!vars.is_object()) return wire;
  for (const auto& [name, original] : vars.items()) {
    json value = original;
    if (!secrets.empty()) {
      std::vector<std::string> masked;
      mask_texts(value, secrets, masked);
      if (!masked.empty()) wire[kSecretsKey][name] = masked;
    }
    if (value.is_string() && !text::is_utf8(value.get_ref<const std::string&>())) {
      wire[kBytesKey][name] = text::to_hex(value.get_ref<const std::string&>());
    } else {
      wire[name] = std::move(value);
    }
  }
  return wire;
}

Result<json> vars_from_wire(const json& wire, const Secrets& secrets) {
  if (wire.is_null()) return json::object();
  if (!wire.is_object()) return protocol_error("vars: expected an object");
  json vars = json::object();
  for (const auto& [name, value] : wire.items()) {
    if (!name.starts_with("$")) vars[name] = value;
  }
  if (auto bytes = wire.find(kBytesKey); bytes != wire.end()) {
    if (!bytes->is_object()) return protocol_error("vars.$bytes: expected an object");
    for (const auto& [name, hex] : bytes->items()) {
      auto raw = hex.is_string() ? text::from_hex(hex.get_ref<const std::string&>()) : std::nullopt;
      if (!raw) return protocol_error("vars.$bytes." + name + ": expected a hex string");
      vars[name] = std::move(*raw);
    }
  }
  if (auto masked = wire.find(kSecretsKey); masked != wire.end()) {
    if (!masked->is_object()) return protocol_error("vars.$secrets: expected an object");
    for (const auto& [name, list] : masked->items()) {
      std::vector<std::string> names;
      for (const auto& n : list.is_array() ? list : json::array()) {
        if (!n.is_string()) break;
        names.push_back(n.get<std::string>());
      }
      if (!list.is_array() || names.size() != list.size()) {
        return protocol_error("vars.$secrets." + name + ": expected an array of names");
      }
      if (auto it = vars.find(name); it != vars.end()) unmask_texts(*it, secrets, names);
    }
  }
  return vars;
}

json vars_for_display(const json& wire) {
  json shown = json::object();
  if (!wire.is_object()) return shown;
  for (const auto& [name, value] : wire.items()) {
    if (!name.starts_with("$")) shown[name] = value;
  }
  if (auto bytes = wire.find(kBytesKey); bytes != wire.end() && bytes->is_object()) {
    for (const auto& [name, hex] : bytes->items()) {
      auto raw = hex.is_string() ? text::from_hex(hex.get_ref<const std::string&>()) : std::nullopt;
      // Dumped with U+FFFD in place of each byte that is not UTF-8.
      if (raw)
        shown[name] = json::parse(json(*raw).dump(-1, ' ', false, json::error_handler_t::replace));
    }
  }
  if (auto masked = wire.find(kSecretsKey); masked != wire.end() && masked->is_object()) {
    for (const auto& [name, list] : masked->items()) {
      if (auto it = shown.find(name); it != shown.end()) hide_markers(*it);
    }
  }
  return shown;
}

}  // namespace corral::ipc
