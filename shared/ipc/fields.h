// Strict readers for the fields of IPC payloads: a field of the wrong type or out of range is
// the sender's protocol error, named with its path ("events[3].step: expected an unsigned
// 32-bit integer, got true"). A missing optional field keeps the default the caller set.
// Internal to shared/ipc.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::ipc::detail {

class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string path) : j_(object), path_(std::move(path)) {
    if (!j_.is_object()) fail_("", "expected an object");
  }

  // Each reads field `name` into `out` when present; `required` makes absence an error.
  void u32(std::string_view name, uint32_t& out, bool required = false);
  void u64(std::string_view name, uint64_t& out, bool required = false);
  void boolean(std::string_view name, bool& out, bool required = false);
  void i64(std::string_view name, int64_t& out, bool required = false);
  void i32(std::string_view name, int& out, bool required = false);
  void text(std::string_view name, std::string& out, bool required = false);
  // The raw JSON of an object field (null when absent and not required).
  void object(std::string_view name, nlohmann::json& out, bool required = false);

  // Records an error about field `name` (the first error is kept).
  void fail(std::string_view name, const std::string& what) { fail_(name, what); }
  // The first error met, or ok.
  const Status& status() const { return status_; }
  bool ok() const { return status_.is_ok(); }
  std::string path(std::string_view name) const;

 private:
  const nlohmann::json* find(std::string_view name, bool required);
  void fail_(std::string_view name, const std::string& what);

  const nlohmann::json& j_;
  std::string path_;
  Status status_;
};

}  // namespace corral::ipc::detail
