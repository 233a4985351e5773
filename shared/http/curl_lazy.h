// libcurl, loaded when first used. corral's binary does not link libcurl: a worker that speaks
// only through the lean client, or a master without HTTP hooks, never maps it nor the two dozen
// libraries it brings (Kerberos, LDAP, GnuTLS, SSH, ...), which were most of a process's start.
// Every curl_* function corral calls is defined in curl_lazy.cc with libcurl's own signature and
// forwards to the function of that name in libcurl.so.4, opened with dlopen on the first call.
//
// When libcurl cannot be loaded, each of them fails as libcurl does when it cannot work:
// nullptr for a handle, CURLE_FAILED_INIT, CURLM_INTERNAL_ERROR, CURLUE_OUT_OF_MEMORY; the
// callers turn those into errors, and curl_load_error() says why.
#pragma once

#include <string>

namespace corral::http {

// Loads libcurl now if it is not loaded. Returns "" when it is, else why not: "libcurl cannot
// be loaded: libcurl.so.4: cannot open shared object file: No such file or directory". Any
// thread.
const std::string& curl_load_failure();

}  // namespace corral::http
