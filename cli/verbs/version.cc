// `corral version`: what this binary is (its version, the commit and build type it was built
// from), the libraries it runs with (as loaded, which may be newer than those it was built
// against), and the kernel it runs on; `--json` for machines.
#include <curl/curl.h>
#include <libpq-fe.h>
#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <sys/utsname.h>
#include <uv.h>

#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "build_info.h"  // generated: CORRAL_GIT_COMMIT, CORRAL_GIT_DIRTY
#include "cli/verb.h"
#include "master/journal/pq_lazy.h"
#include "shared/http/curl_lazy.h"

namespace corral::cli {
namespace {

using nlohmann::json;

// libpq's version number: 150010 is 15.10.
std::string libpq_version() {
  const int v = PQlibVersion();  // loads libpq (master/journal/pq_lazy.h)
  if (v == 0) return master::journal::pq_load_failure();
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000);
}

// libcurl is loaded when first used (shared/http/curl_lazy.h): this loads it.
std::string libcurl_version() {
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  return info != nullptr ? info->version : http::curl_load_failure();
}

std::vector<std::pair<std::string, std::string>> libraries() {
  return {{"libuv", uv_version_string()},
          {"libcurl", libcurl_version()},
          {"OpenSSL", OpenSSL_version(OPENSSL_VERSION_STRING)},
          {"SQLite", sqlite3_libversion()},
          {"libpq", libpq_version()},
          {"nghttp2", nghttp2_version(0)->version_str}};
}

std::string kernel() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

json version_json() {
  const std::string commit = CORRAL_GIT_COMMIT;
  json libs = json::object();
  for (const auto& [name, version] : libraries()) libs[name] = version;
  return {{"version", CORRAL_VERSION},      {"commit", commit.empty() ? json() : json(commit)},
          {"dirty", CORRAL_GIT_DIRTY != 0}, {"build_type", CORRAL_BUILD_TYPE},
          {"libraries", std::move(libs)},   {"kernel", kernel()}};
}

std::string version_text() {
  const std::string commit = CORRAL_GIT_COMMIT;
  std::string out = "corral " CORRAL_VERSION "\n";
  auto line = [&out](const std::string& name, const std::string& value) {
    out += "  " + name + std::string(10 - name.size(), ' ') + value + "\n";
  };
  line("commit", commit.empty()     ? "unknown (not built from a git checkout)"
                 : CORRAL_GIT_DIRTY ? commit + " (with changes not committed)"
                                    : commit);
  line("build", std::string(CORRAL_BUILD_TYPE).empty() ? "(no build type)" : CORRAL_BUILD_TYPE);
  for (const auto& [name, version] : libraries()) line(name, version);
  line("kernel", kernel());
  return out;
}

class VersionVerb : public Verb {
 public:
  void setup(CLI::App& app) override {
    app.add_flag("--json", json_,
                 "print {\"version\", \"commit\", \"dirty\", \"build_type\", \"libraries\", "
                 "\"kernel\"} as JSON");
  }
  int run(const Context&) override {
    std::cout << (json_ ? version_json().dump(2) + "\n" : version_text());
    return 0;
  }

 private:
  bool json_ = false;
};

CORRAL_REGISTER_VERB(VersionVerb, "version",
                     "print corral's version, the commit it was built from and its libraries")

}  // namespace
}  // namespace corral::cli
