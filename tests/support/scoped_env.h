// Sets (or unsets) one environment variable for a test's scope and restores it afterwards.
// Tests run on one thread, so nothing else reads the environment meanwhile.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>

namespace corral::test {

class ScopedEnv {
 public:
  // A null `value` unsets the variable.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace corral::test
