// Status and Result<T>: how expected failures travel in corral.
//
// Expected failures (a syscall that fails, a peer that sends garbage, bad input, a timeout) are
// values, never exceptions. Exceptions are for start-up and config loading only, and broken
// invariants abort. A Status is cheap to copy when OK (no allocation).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace corral {

enum class Code {
  kOk,
  kInvalidArgument,  // the caller's input is wrong; the message names the field or value
  kNotFound,
  kAlreadyExists,
  kUnavailable,  // a peer is not there (daemon not running, worker gone)
  kResourceExhausted,
  kIo,        // a syscall or libuv call failed; the message names the call and errno
  kProtocol,  // a peer broke the wire contract
  kTimeout,
  kInternal,
  kAborted,  // the caller no longer owns what it tried to change (fenced off by a newer owner)
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status io_error(std::string m) { return {Code::kIo, std::move(m)}; }
inline Status protocol_error(std::string m) { return {Code::kProtocol, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: must not be OK

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace corral
