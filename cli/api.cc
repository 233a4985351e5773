#include "cli/api.h"

#include <iostream>

#include "shared/exit_codes.h"
#include "shared/http/blocking_client.h"

namespace corral::cli {

Api::Api(const Context& ctx, long timeout_ms)
    : socket_path_(ctx.socket_path()), timeout_ms_(timeout_ms) {}

Result<nlohmann::json> Api::get(const std::string& path) const { return call("GET", path, ""); }

Result<nlohmann::json> Api::post(const std::string& path, const nlohmann::json& body) const {
  return call("POST", path, body.dump());
}

Result<nlohmann::json> Api::del(const std::string& path) const { return call("DELETE", path, ""); }

Result<nlohmann::json> Api::call(const char* method, const std::string& path,
                                 const std::string& body) const {
  auto result =
      http::request(http::Target::over_unix(socket_path_), method, path, body, timeout_ms_);
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
              << "); start it with 'corral start'\n";
    return kExitDaemonNotRunning;
  }
  return fail(status.message());
}

int fail(const std::string& message) {
  std::cerr << "corral: " << message << "\n";
  return 1;
}

}  // namespace corral::cli
