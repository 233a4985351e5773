// Not in a unity batch: libcurl's header must be read without its type-checking macros here,
// since this file defines the functions they wrap (CMakeLists.txt).
#define CURL_DISABLE_TYPECHECK
#include "shared/http/curl_lazy.h"
#include "shared/http/curl_varargs.h"

#include <curl/curl.h>

#include "shared/lazy_library.h"

// Each function corral calls: (return type, name, parameters, arguments, what it returns when
// libcurl cannot be loaded). The ones taking "..." are in curl_varargs.c.
#define CORRAL_CURL_FUNCTIONS(X)                                                                  \
  X(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)                         \
  X(CURL*, curl_easy_init, (void), (), nullptr)                                                   \
  X(CURLcode, curl_easy_perform, (CURL * h), (h), CURLE_FAILED_INIT)                              \
  X(CURLcode, curl_easy_pause, (CURL * h, int bitmask), (h, bitmask), CURLE_FAILED_INIT)          \
  X(const char*, curl_easy_strerror, (CURLcode code), (code), curl().lib.failure.c_str())         \
  X(const char*, curl_multi_strerror, (CURLMcode code), (code), curl().lib.failure.c_str())       \
  X(curl_slist*, curl_slist_append, (curl_slist * list, const char* data), (list, data), nullptr) \
  X(curl_version_info_data*, curl_version_info, (CURLversion v), (v), nullptr)                    \
  X(CURLM*, curl_multi_init, (void), (), nullptr)                                                 \
  X(CURLMcode, curl_multi_add_handle, (CURLM * m, CURL * h), (m, h), CURLM_INTERNAL_ERROR)        \
  X(CURLMcode, curl_multi_remove_handle, (CURLM * m, CURL * h), (m, h), CURLM_INTERNAL_ERROR)     \
  X(CURLMcode, curl_multi_cleanup, (CURLM * m), (m), CURLM_INTERNAL_ERROR)                        \
  X(CURLMsg*, curl_multi_info_read, (CURLM * m, int* queued), (m, queued), nullptr)               \
  X(CURLMcode, curl_multi_socket_action, (CURLM * m, curl_socket_t s, int ev, int* running),      \
    (m, s, ev, running), CURLM_INTERNAL_ERROR)                                                    \
  X(CURLMcode, curl_multi_assign, (CURLM * m, curl_socket_t s, void* p), (m, s, p),               \
    CURLM_INTERNAL_ERROR)                                                                         \
  X(CURLU*, curl_url, (void), (), nullptr)                                                        \
  X(CURLUcode, curl_url_set, (CURLU * u, CURLUPart what, const char* part, unsigned flags),       \
    (u, what, part, flags), CURLUE_OUT_OF_MEMORY)                                                 \
  X(CURLUcode, curl_url_get, (CURLU * u, CURLUPart what, char** part, unsigned flags),            \
    (u, what, part, flags), CURLUE_OUT_OF_MEMORY)
// Those that return nothing: (name, parameters, arguments).
#define CORRAL_CURL_PROCEDURES(X)                     \
  X(curl_easy_cleanup, (CURL * h), (h))               \
  X(curl_easy_reset, (CURL * h), (h))                 \
  X(curl_slist_free_all, (curl_slist * list), (list)) \
  X(curl_free, (void* p), (p))                        \
  X(curl_url_cleanup, (CURLU * u), (u))

namespace corral::http {
namespace {

struct Curl {
  LazyLibrary lib;
#define CORRAL_CURL_POINTER(ret, name, params, args, ...) ret(*name) params = nullptr;
  CORRAL_CURL_FUNCTIONS(CORRAL_CURL_POINTER)
#define CORRAL_CURL_PROCEDURE_POINTER(name, params, args) void(*name) params = nullptr;
  CORRAL_CURL_PROCEDURES(CORRAL_CURL_PROCEDURE_POINTER)
  CorralCurlVarargs varargs{};
};

Curl load() {
  // CORRAL_TEST_LIBCURL names another file: the tests' way to see libcurl missing.
  Curl c{open_library("libcurl.so.4", "CORRAL_TEST_LIBCURL", "libcurl")};
#define CORRAL_CURL_RESOLVE(name, ...) c.name = find_function<decltype(c.name)>(c.lib, #name);
#define CORRAL_CURL_RESOLVE_FUNCTION(ret, name, ...) CORRAL_CURL_RESOLVE(name)
  CORRAL_CURL_FUNCTIONS(CORRAL_CURL_RESOLVE_FUNCTION)
  CORRAL_CURL_PROCEDURES(CORRAL_CURL_RESOLVE)
  c.varargs.easy_setopt = find_function<decltype(c.varargs.easy_setopt)>(c.lib, "curl_easy_setopt");
  c.varargs.multi_setopt =
      find_function<decltype(c.varargs.multi_setopt)>(c.lib, "curl_multi_setopt");
  c.varargs.easy_getinfo =
      find_function<decltype(c.varargs.easy_getinfo)>(c.lib, "curl_easy_getinfo");
  return c;
}

// Loaded on the first call, once, whichever thread calls first. Usable only when every
// function was found.
const Curl& curl() {
  static const Curl c = load();
  return c;
}

}  // namespace

const std::string& curl_load_failure() { return curl().lib.failure; }

}  // namespace corral::http

using corral::http::curl;

extern "C" {

#define CORRAL_CURL_FORWARD(...) CORRAL_LAZY_FORWARD(curl, __VA_ARGS__)
CORRAL_CURL_FUNCTIONS(CORRAL_CURL_FORWARD)
#define CORRAL_CURL_FORWARD_PROCEDURE(...) CORRAL_LAZY_FORWARD_PROCEDURE(curl, __VA_ARGS__)
CORRAL_CURL_PROCEDURES(CORRAL_CURL_FORWARD_PROCEDURE)

// The variadic ones are in curl_varargs.c.
const CorralCurlVarargs* corral_curl_varargs(void) {
  return curl().lib.usable() ? &curl().varargs : nullptr;
}

}  // extern "C"
