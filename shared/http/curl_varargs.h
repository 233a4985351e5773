/* The variadic functions of libcurl that corral calls (curl_easy_setopt, curl_multi_setopt,
 * curl_easy_getinfo) are forwarded from C (curl_varargs.c): their last named parameter is an
 * enum, which C++ cannot pass to va_start portably. curl_lazy.cc gives them libcurl's
 * functions. C and C++. */
#ifndef CORRAL_SHARED_HTTP_CURL_VARARGS_H
#define CORRAL_SHARED_HTTP_CURL_VARARGS_H

#include <curl/curl.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CorralCurlVarargs {
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
};

/* libcurl's functions, loading it if needed; NULL when it cannot be loaded. */
const struct CorralCurlVarargs* corral_curl_varargs(void);

#ifdef __cplusplus
}
#endif

#endif
