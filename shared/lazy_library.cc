#include "shared/lazy_library.h"

#include <dlfcn.h>

#include "shared/test_hooks.h"

namespace corral {

namespace {

void set_error(LazyLibrary& lib, const std::string& error) {
  lib.handle = nullptr;
  lib.failure = lib.what + " cannot be loaded: " + error;
}

}  // namespace

LazyLibrary open_library(const char* soname, const char* test_hook_name, const char* what) {
  LazyLibrary lib;
  lib.what = what;
  const char* test_path = test_hook(test_hook_name);
  const char* path = test_path != nullptr ? test_path : soname;
  lib.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) set_error(lib, dlerror());
  return lib;
}

void* find_symbol(LazyLibrary& lib, const char* name) {
  if (!lib.usable()) return nullptr;
  void* symbol = dlsym(lib.handle, name);
  if (symbol == nullptr) set_error(lib, "it has no " + std::string(name));
  return symbol;
}

}  // namespace corral
