#include "shared/http/tls_options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace corral::http {
namespace {

using nlohmann::json;

template <typename T>
void take(std::optional<T>& field, const std::optional<T>& base) {
  if (!field) field = base;
}

Status read_string(const json& j, const char* name, const std::string& where,
                   std::optional<std::string>& out) {
  auto it = j.find(name);
  if (it == j.end()) return Status::ok();
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return invalid_argument(where + "." + name + ": expected a non-empty string");
  }
  out = it->get<std::string>();
  return Status::ok();
}

Status readable(const std::string& path, const std::string& field) {
  if (::access(path.c_str(), R_OK) != 0) {
    return invalid_argument(field + " " + path + ": " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

TlsOptions TlsOptions::over(const TlsOptions& base) const {
  TlsOptions o = *this;
  take(o.ca_file, base.ca_file);
  take(o.client_cert, base.client_cert);
  take(o.client_key, base.client_key);
  take(o.server_name, base.server_name);
  take(o.verify, base.verify);
  take(o.min_version, base.min_version);
  return o;
}

bool TlsOptions::empty() const { return *this == TlsOptions{}; }

std::string TlsOptions::key() const {
  // NUL cannot be in a path or a name: fields cannot run into each other.
  std::string k;
  for (const auto* f : {&ca_file, &client_cert, &client_key, &server_name, &min_version}) {
    k += f->value_or("");
    k += '\0';
  }
  k += verify.value_or(true) ? '1' : '0';
  return k;
}

Result<TlsOptions> tls_options_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return invalid_argument(where + ": expected an object");
  static const char* const kKnown[] = {"ca_file",     "client_cert", "client_key",
                                       "server_name", "verify",      "min_version"};
  for (const auto& [name, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnown) known = known || name == k;
    if (!known) {
      return invalid_argument(where + ": unknown field \"" + name +
                              "\" (expected ca_file, client_cert, client_key, server_name, "
                              "verify or min_version)");
    }
  }
  TlsOptions o;
  for (auto [name, field] : {std::pair{"ca_file", &o.ca_file},
                             {"client_cert", &o.client_cert},
                             {"client_key", &o.client_key},
                             {"server_name", &o.server_name},
                             {"min_version", &o.min_version}}) {
    if (Status s = read_string(j, name, where, *field); !s) return s;
  }
  if (auto it = j.find("verify"); it != j.end()) {
    if (!it->is_boolean()) return invalid_argument(where + ".verify: expected true or false");
    o.verify = it->get<bool>();
  }
  if (o.min_version && *o.min_version != "1.2" && *o.min_version != "1.3") {
    return invalid_argument(where + ".min_version: expected \"1.2\" or \"1.3\", not \"" +
                            *o.min_version + "\"");
  }
  if (o.client_cert.has_value() != o.client_key.has_value()) {
    return invalid_argument(where + ": client_cert and client_key go together");
  }
  return o;
}

json to_json(const TlsOptions& o) {
  json j = json::object();
  if (o.ca_file) j["ca_file"] = *o.ca_file;
  if (o.client_cert) j["client_cert"] = *o.client_cert;
  if (o.client_key) j["client_key"] = *o.client_key;
  if (o.server_name) j["server_name"] = *o.server_name;
  if (o.verify) j["verify"] = *o.verify;
  if (o.min_version) j["min_version"] = *o.min_version;
  return j;
}

Status check_tls_files(const TlsOptions& o, const std::string& where) {
  if (o.ca_file) {
    if (Status s = readable(*o.ca_file, where + ".ca_file"); !s) return s;
  }
  if (o.client_cert) {
    if (Status s = readable(*o.client_cert, where + ".client_cert"); !s) return s;
  }
  if (!o.client_key) return Status::ok();
  const std::string field = where + ".client_key " + *o.client_key;
  struct stat st {};
  if (::stat(o.client_key->c_str(), &st) != 0) {
    return invalid_argument(field + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return invalid_argument(field + ": mode " + mode +
                            " lets its group or others read it; make it 0600 (chmod 600)");
  }
  return readable(*o.client_key, where + ".client_key");
}

std::optional<HttpVersion> http_version_from(std::string_view s) {
  if (s == "auto") return HttpVersion::kAuto;
  if (s == "1.1") return HttpVersion::kHttp11;
  if (s == "2") return HttpVersion::kHttp2;
  return std::nullopt;
}

const char* to_string(HttpVersion v) {
  switch (v) {
    case HttpVersion::kAuto:
      return "auto";
    case HttpVersion::kHttp11:
      return "1.1";
    case HttpVersion::kHttp2:
      return "2";
  }
  return "auto";
}

}  // namespace corral::http
