// A shared library opened with dlopen when first needed, instead of linked: libcurl
// (shared/http/curl_lazy.cc) and libpq (master/journal/pq_lazy.cc). Between them they bring
// about 30 libraries (Kerberos, LDAP, GnuTLS, SASL, SSH, ...) that a process would otherwise
// map and relocate at every start, workers included, though only a master with a PostgreSQL
// journal uses libpq and only proxies and "http_client": "curl" use libcurl.
//
// Each user defines the library's functions it calls, with their own names and signatures,
// forwarding to the library's through pointers resolved here. When the library cannot be
// loaded, or lacks one of them, none is called: each fails as the library does when it cannot
// work, and `failure` says why.
#pragma once

#include <string>

namespace corral {

struct LazyLibrary {
  std::string what;        // "libcurl", for messages
  void* handle = nullptr;  // dlopen's; nullptr when the library cannot be used
  // "" when usable, else why not, for error messages: "libcurl cannot be loaded: " and
  // dlerror()'s text or the function it lacks.
  std::string failure;

  bool usable() const { return handle != nullptr; }
};

// Opens `soname` ("libcurl.so.4"), or the file the test hook `test_hook` names when it is set
// (the tests' way to see a library missing). `what` names it in messages ("libcurl").
LazyLibrary open_library(const char* soname, const char* test_hook, const char* what);

// The function `name` of `lib`, as a pointer of type F. When `lib` lacks it, `lib` becomes
// unusable, saying which function it lacks.
void* find_symbol(LazyLibrary& lib, const char* name);
template <typename F>
F find_function(LazyLibrary& lib, const char* name) {
  return reinterpret_cast<F>(find_symbol(lib, name));
}

}  // namespace corral

// The definitions of a library's functions, for its X-macro lists (curl_lazy.cc, pq_lazy.cc):
// each forwards to the pointer of the same name in the table `get()` returns (which holds the
// LazyLibrary as `lib`), or, when the library is not usable, returns `failed` (a procedure
// does nothing).
#define CORRAL_LAZY_FORWARD(get, ret, name, params, args, failed) \
  ret(name) params {                                              \
    const auto& table = get();                                    \
    return table.lib.usable() ? table.name args : failed;         \
  }
#define CORRAL_LAZY_FORWARD_PROCEDURE(get, name, params, args) \
  void(name) params {                                          \
    const auto& table = get();                                 \
    if (table.lib.usable()) table.name args;                   \
  }
