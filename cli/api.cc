#include "cli/api.h"

#include <filesystem>
#include <iostream>

#include "config/config.h"
#include "shared/exit_codes.h"

namespace corral::cli {

Api::Api(const Context& ctx, long timeout_ms) : Api(ctx.api_address, ctx.api_token, timeout_ms) {
  if (ctx.api_address.empty()) {
    target_ = http::Target::over_unix(ctx.socket_path());
    where_ = ctx.socket_path();
    bad_address_.clear();
  }
}

Api::Api(const std::string& address, const std::string& token, long timeout_ms)
    : where_(address), timeout_ms_(timeout_ms) {
  auto hp = config::parse_host_port(address);
  if (!hp) {
    bad_address_ = "CORRAL_API: " + hp.status().message();
    return;
  }
  target_ = http::Target::over_tcp(hp->first, hp->second, token);
}

Result<nlohmann::json> Api::get(const std::string& path) const { return call("GET", path, ""); }

Result<nlohmann::json> Api::post(const std::string& path, const nlohmann::json& body) const {
  return call("POST", path, body.dump());
}

Result<nlohmann::json> Api::del(const std::string& path) const { return call("DELETE", path, ""); }

Result<http::HttpResult> Api::send(const char* method, const std::string& path,
                                   const std::string& body, long timeout_ms) const {
  if (!bad_address_.empty()) return invalid_argument(bad_address_);
  return http::request(target_, method, path, body, timeout_ms);
}

Result<nlohmann::json> Api::call(const char* method, const std::string& path,
                                 const std::string& body) const {
  auto result = send(method, path, body, timeout_ms_);
  if (!result) return result.status();
  nlohmann::json json = result->json();
  const int status = result->status;
  if (status >= 200 && status < 300) {
    if (json.is_null() && !result->body.empty()) {
      return protocol_error(std::string(method) + " " + path + ": the daemon's answer is not JSON");
    }
    return json;
  }
  std::string message =
      json.is_object() && json.contains("error") && json["error"].is_string()
          ? json["error"].get<std::string>()
          : std::string(method) + " " + path + " failed with HTTP " + std::to_string(status);
  const Code code = status == 404  ? Code::kNotFound
                    : status < 500 ? Code::kInvalidArgument
                                   : Code::kInternal;
  return Status(code, std::move(message));
}

int report_failure(const Status& status, const std::string& socket_path) {
  if (status.code() == Code::kUnavailable) {
    std::cerr << "corral: daemon is not running (no answer on " << socket_path
              << "); start it with 'corral start'" << service_hint(socket_path) << "\n";
    return kExitDaemonNotRunning;
  }
  return fail(status.message());
}

std::string service_hint(const std::string& socket_path, const std::string& service_home) {
  const std::string service_socket = service_home + "/corral.sock";
  std::error_code ec;
  if (socket_path == service_socket || !std::filesystem::exists(service_socket, ec)) return "";
  return "; the corral service's daemon is in " + service_home +
         ": export CORRAL_HOME=" + service_home;
}

bool daemon_unreachable(const Status& status) {
  return status.code() == Code::kUnavailable || status.code() == Code::kTimeout ||
         status.code() == Code::kIo;
}

int fail(const std::string& message) {
  std::cerr << "corral: " << message << "\n";
  return 1;
}

int usage_error(const std::string& message) {
  std::cerr << "corral: " << message << "\n";
  return kExitUsage;
}

}  // namespace corral::cli
