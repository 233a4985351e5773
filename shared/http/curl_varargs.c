/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo, forwarded to libcurl's, which
 * curl_lazy.cc loads when first needed (shared/http/curl_lazy.h). An option's argument is a
 * long, a pointer (data or function) or a curl_off_t, by the range its number is in, as
 * libcurl itself reads it; every CURLINFO takes a pointer. */
#define CURL_DISABLE_TYPECHECK
#include "shared/http/curl_varargs.h"

#include <stdarg.h>

CURLcode curl_easy_setopt(CURL* h, CURLoption option, ...) {
  const struct CorralCurlVarargs* f = corral_curl_varargs();
  va_list ap;
  CURLcode rc;
  if (f == NULL) return CURLE_FAILED_INIT;
  va_start(ap, option);
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = f->easy_setopt(h, option, va_arg(ap, long));
  } else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB) {
    rc = f->easy_setopt(h, option, va_arg(ap, curl_off_t));
  } else {
    rc = f->easy_setopt(h, option, va_arg(ap, void*));
  }
  va_end(ap);
  return rc;
}

CURLMcode curl_multi_setopt(CURLM* m, CURLMoption option, ...) {
  const struct CorralCurlVarargs* f = corral_curl_varargs();
  va_list ap;
  CURLMcode rc;
  if (f == NULL) return CURLM_INTERNAL_ERROR;
  va_start(ap, option);
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = f->multi_setopt(m, option, va_arg(ap, long));
  } else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB) {
    rc = f->multi_setopt(m, option, va_arg(ap, curl_off_t));
  } else {
    rc = f->multi_setopt(m, option, va_arg(ap, void*));
  }
  va_end(ap);
  return rc;
}

CURLcode curl_easy_getinfo(CURL* h, CURLINFO info, ...) {
  const struct CorralCurlVarargs* f = corral_curl_varargs();
  va_list ap;
  CURLcode rc;
  if (f == NULL) return CURLE_FAILED_INIT;
  va_start(ap, info);
  rc = f->easy_getinfo(h, info, va_arg(ap, void*));
  va_end(ap);
  return rc;
}
