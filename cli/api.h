// The daemon's control API as the CLI uses it: JSON over HTTP on $CORRAL_HOME/corral.sock (or
// over TCP to $CORRAL_API with $CORRAL_API_TOKEN), with failures turned into the CLI's one-line
// messages and exit codes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/verb.h"
#include "shared/http/blocking_client.h"
#include "shared/status.h"

namespace corral::cli {

class Api {
 public:
  // A malformed $CORRAL_API makes every call fail with kInvalidArgument naming it.
  explicit Api(const Context& ctx, long timeout_ms = 5000);
  // Over TCP to `address` ("HOST:PORT"), with `token` if not "".
  Api(const std::string& address, const std::string& token, long timeout_ms = 5000);

  // The JSON body of a 2xx response. Errors: Code::kUnavailable when no daemon answers,
  // kTimeout, kIo (the connection broke), kProtocol (a 2xx body that is not JSON); an HTTP error
  // becomes kNotFound (404), kInvalidArgument (other 4xx) or kInternal (5xx), with the API's
  // "error" message.
  Result<nlohmann::json> get(const std::string& path) const;
  Result<nlohmann::json> post(const std::string& path, const nlohmann::json& body) const;
  Result<nlohmann::json> del(const std::string& path) const;
  // The response whatever its status, for a caller that tells statuses apart (a 400 from a
  // 429); errors only when no response came.
  Result<http::HttpResult> send(const char* method, const std::string& path,
                                const std::string& body, long timeout_ms) const;

  // Where the daemon is asked: "unix:/path/corral.sock" or "HOST:PORT", for messages.
  const std::string& socket_path() const { return where_; }

 private:
  Result<nlohmann::json> call(const char* method, const std::string& path,
                              const std::string& body) const;

  http::Target target_;
  std::string where_;
  std::string bad_address_;  // why $CORRAL_API cannot be used, when it cannot
  long timeout_ms_;
};

// The body of GET `path`, read into its answer model (shared/api/) with
// `read(json) -> Result<Model>`; an answer that does not fit is an error naming the route and
// the field.
template <typename Read>
auto read_answer(const std::string& path, const nlohmann::json& body, Read&& read)
    -> decltype(read(body)) {
  auto answer = read(body);
  if (!answer) {
    return protocol_error("the daemon's answer to GET " + path + ": " + answer.status().message());
  }
  return answer;
}

// GET `path`, read as read_answer() does.
template <typename Read>
auto get_answer(const Api& api, const std::string& path, Read&& read)
    -> decltype(read(nlohmann::json())) {
  auto body = api.get(path);
  if (!body) return body.status();
  return read_answer(path, *body, read);
}

// Prints the one line that explains a failed call on stderr and returns the exit code:
// kExitDaemonNotRunning for kUnavailable ("daemon is not running ... start it with ..."),
// 1 for anything else ("corral: <message>").
int report_failure(const Status& status, const std::string& socket_path);

// The home of the Debian package's service (corral.service).
constexpr const char* kServiceHome = "/var/lib/corral";
// When no daemon answers on `socket_path` but one may in `service_home` (its socket is there,
// and it is another home): "; the corral service's daemon is in /var/lib/corral: export
// CORRAL_HOME=/var/lib/corral". Else "". For the message of report_failure.
std::string service_hint(const std::string& socket_path,
                         const std::string& service_home = kServiceHome);
// Whether a failed call found no daemon answering: none there, the connection broke, or no
// answer in time.
bool daemon_unreachable(const Status& status);

// Prints "corral: <message>" on stderr and returns 1.
int fail(const std::string& message);
// Prints "corral: <message>" on stderr and returns kExitUsage (2): a bad flag or input file.
int usage_error(const std::string& message);

}  // namespace corral::cli
