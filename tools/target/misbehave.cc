// corral-target's misbehaving routes: what a hostile or careless API answers, for the tests
// of corral's HTTP client and engine (see target.h for the list).
#include "tools/target/target.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace corral::target {
namespace {

using http::Response;

const std::string kNotUtf8("\xff\xfe not UTF-8 \xc3");

Response redirect(const http::Request& req) {
  int code = static_cast<int>(query_number(req, "code", 302));
  Response r;
  r.status = code;
  r.content_type = "text/plain";
  r.body = "moved";
  r.headers.emplace_back("Location", req.query_param("to").value_or("/echo"));
  return r;
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The request as the server saw it: method, path, headers and body.
Response echo(const http::Request& req) {
  nlohmann::json headers = nlohmann::json::object();
  for (const auto& [name, value] : req.headers) headers[lowercase(name)] = value;
  return Response::json(200, {{"method", req.method},
                              {"path", req.path},
                              {"query", req.query},
                              {"headers", headers},
                              {"body", req.body}});
}

}  // namespace

uint64_t query_number(const http::Request& req, const char* name, uint64_t fallback) {
  std::string text = req.query_param(name).value_or("");
  uint64_t v = fallback;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : fallback;
}

bool Target::misbehave(const http::Request& req, const http::Responder& respond) {
  const std::string& p = req.path;
  if (p == "/bytes" && req.method == "GET") {
    Response r{200, "application/octet-stream", kNotUtf8, {{"X-Bytes", kNotUtf8}}, {}};
    respond.send(std::move(r));
  } else if (p == "/bytes") {
    // Whether the client sent back exactly the bytes GET /bytes gave it.
    bool same = req.body == kNotUtf8;
    respond.send(Response::json(same ? 200 : 422, {{"same", same}, {"size", req.body.size()}}));
  } else if (p == "/redirect") {
    respond.send(redirect(req));
  } else if (p == "/redirect-loop") {
    respond.send(Response{302, "text/plain", "again", {{"Location", "/redirect-loop"}}, {}});
  } else if (p == "/echo") {
    respond.send(echo(req));
  } else if (p == "/big") {
    // A JSON document of about `bytes` bytes: {"data": "xxxx..."}.
    uint64_t bytes = std::min<uint64_t>(query_number(req, "bytes", 1024), uint64_t{1} << 30);
    std::string body = "{\"data\": \"" + std::string(bytes > 12 ? bytes - 12 : 0, 'x') + "\"}";
    respond.send(Response{200, "application/json", std::move(body), {}, {}});
  } else if (p == "/hang") {
    ++hanging_;  // never answered: the connection stays until the client gives up
  } else {
    return false;
  }
  return true;
}

}  // namespace corral::target
