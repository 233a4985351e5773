// Strict readers for the fields of IPC payloads: a field of the wrong type or out of range is
// the sender's protocol error, named with its path ("events[3].step: expected an unsigned
// 32-bit integer, got true"). A missing optional field keeps the default the caller set.
// Internal to shared/ipc.
#pragma once

#include <cstdint>
#include <initializer_list>
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
  void number(std::string_view name, double& out, bool required = false);
  // The raw JSON of an object field (null when absent and not required).
  void object(std::string_view name, nlohmann::json& out, bool required = false);
  // The raw JSON of a field of any type, for a reader of its own (a scenario, a checkpoint).
  void any(std::string_view name, nlohmann::json& out, bool required = false);
  // An error for the first field not in `known`: both sides of the pipe are built from one
  // source, so a field the reader does not know is a renamed or mistyped one.
  void known(std::initializer_list<std::string_view> known);

  // Takes the first error of a reader of a nested object (made with path(name)).
  void take(const FieldReader& nested) {
    if (status_.is_ok()) status_ = nested.status_;
  }
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
