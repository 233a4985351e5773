#include "shared/ipc/fields.h"

#include <algorithm>

namespace corral::ipc::detail {

using nlohmann::json;

namespace {

// A value as shown in a message: its JSON text, cut short.
std::string shown(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) text.replace(61, std::string::npos, "...");
  return text;
}

}  // namespace

std::string FieldReader::path(std::string_view name) const {
  if (name.empty()) return path_.empty() ? "payload" : path_;
  return path_.empty() ? std::string(name) : path_ + "." + std::string(name);
}

void FieldReader::fail_(std::string_view name, const std::string& what) {
  if (status_.is_ok()) status_ = protocol_error(path(name) + ": " + what);
}

const json* FieldReader::find(std::string_view name, bool required) {
  if (!status_.is_ok()) return nullptr;
  auto it = j_.find(name);
  if (it == j_.end()) {
    if (required) fail_(name, "missing");
    return nullptr;
  }
  return &*it;
}

void FieldReader::u32(std::string_view name, uint32_t& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  // Text parses a non-negative integer as unsigned, but JSON built in memory may hold it signed.
  bool fits = v->is_number_integer() && (v->is_number_unsigned() || v->get<int64_t>() >= 0) &&
              v->get<uint64_t>() <= std::numeric_limits<uint32_t>::max();
  if (!fits) {
    fail_(name, "expected an unsigned 32-bit integer, got " + shown(*v));
    return;
  }
  out = v->get<uint32_t>();
}

void FieldReader::u64(std::string_view name, uint64_t& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0)) {
    fail_(name, "expected an unsigned 64-bit integer, got " + shown(*v));
    return;
  }
  out = v->get<uint64_t>();
}

void FieldReader::boolean(std::string_view name, bool& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  if (!v->is_boolean()) {
    fail_(name, "expected true or false, got " + shown(*v));
    return;
  }
  out = v->get<bool>();
}

void FieldReader::i64(std::string_view name, int64_t& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  bool fits = v->is_number_integer() &&
              (!v->is_number_unsigned() ||
               v->get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()});
  if (!fits) {
    fail_(name, "expected a 64-bit integer, got " + shown(*v));
    return;
  }
  out = v->get<int64_t>();
}

void FieldReader::i32(std::string_view name, int& out, bool required) {
  int64_t wide = out;
  i64(name, wide, required);
  if (!ok()) return;
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    fail_(name, "expected a 32-bit integer, got " + std::to_string(wide));
    return;
  }
  out = static_cast<int>(wide);
}

void FieldReader::text(std::string_view name, std::string& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  if (!v->is_string()) {
    fail_(name, "expected a string, got " + shown(*v));
    return;
  }
  out = v->get<std::string>();
}

void FieldReader::number(std::string_view name, double& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  if (!v->is_number()) {
    fail_(name, "expected a number, got " + shown(*v));
    return;
  }
  out = v->get<double>();
}

void FieldReader::any(std::string_view name, json& out, bool required) {
  if (const json* v = find(name, required)) out = *v;
}

void FieldReader::known(std::initializer_list<std::string_view> known) {
  if (!ok() || !j_.is_object()) return;
  for (const auto& [key, value] : j_.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail_(key, "unknown field");
      return;
    }
  }
}

void FieldReader::object(std::string_view name, json& out, bool required) {
  const json* v = find(name, required);
  if (v == nullptr) return;
  if (!v->is_object()) {
    fail_(name, "expected an object, got " + shown(*v));
    return;
  }
  out = *v;
}

}  // namespace corral::ipc::detail
