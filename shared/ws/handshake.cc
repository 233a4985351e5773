#include "shared/ws/handshake.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "shared/text/packed.h"

namespace corral::ws {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string base64(const unsigned char* data, size_t n) {
  return base64_encode(std::string_view(reinterpret_cast<const char*>(data), n));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t at = s.find(sep);
    out.push_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// The values of every header called `name`, joined by ", " as RFC 9110 allows; nullopt when
// there is none.
std::optional<std::string> joined(const http::HeaderList& headers, std::string_view name) {
  std::optional<std::string> out;
  for (const auto& [n, v] : headers) {
    if (!http::iequals(n, name)) continue;
    out = out ? *out + ", " + v : v;
  }
  return out;
}

bool has_token(std::string_view value, std::string_view token) {
  for (const std::string& t : header_tokens(value)) {
    if (http::iequals(t, token)) return true;
  }
  return false;
}

// A window-bits parameter: 8 to 15; `value` may be empty (the offer's bare
// client_max_window_bits).
bool window_bits(std::string_view value, int& out) {
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  if (value.empty() || value.size() > 2) return false;
  int n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  if (n < 8 || n > 15) return false;
  out = n;
  return true;
}

// An extension parameter, "name" or "name=value", trimmed; a missing value is "".
std::pair<std::string_view, std::string_view> param(std::string_view p) {
  size_t eq = p.find('=');
  return {trim(p.substr(0, eq)), eq == std::string_view::npos ? "" : trim(p.substr(eq + 1))};
}

// The server's permessage-deflate answer, checked against what corral offers.
Result<Deflate> agreed_deflate(std::string_view extension) {
  std::vector<std::string_view> parts = split(extension, ';');
  Deflate d;
  d.on = true;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view p = parts[i];
    auto [name, value] = param(p);
    bool ok = true;
    if (http::iequals(name, "server_no_context_takeover")) {
      d.server_no_context_takeover = true;
    } else if (http::iequals(name, "client_no_context_takeover")) {
      d.client_no_context_takeover = true;
    } else if (http::iequals(name, "server_max_window_bits")) {
      ok = window_bits(value, d.server_max_window_bits);
    } else if (http::iequals(name, "client_max_window_bits")) {
      // RFC 7692 7.1.2.2: not in an answer to an offer without it, and corral's has none.
      return protocol_error(
          "the server answered permessage-deflate with client_max_window_bits, which corral's "
          "offer does not carry");
    } else {
      ok = false;
    }
    if (!ok) {
      return protocol_error("Sec-WebSocket-Extensions: permessage-deflate parameter \"" +
                            std::string(p) + "\" is not one RFC 7692 allows");
    }
  }
  return d;
}

Result<Agreed> check_extensions(const http::HeaderList& headers, const ClientHello& hello,
                                Agreed agreed) {
  std::optional<std::string> ext = joined(headers, "Sec-WebSocket-Extensions");
  if (!ext || trim(*ext).empty()) return agreed;
  for (std::string_view e : split(*ext, ',')) {
    if (!http::iequals(trim(e.substr(0, e.find(';'))), "permessage-deflate") ||
        !hello.offer_deflate || agreed.deflate.on) {
      return protocol_error("the server chose the extension \"" + std::string(e) +
                            "\", which corral did not offer");
    }
    auto d = agreed_deflate(e);
    if (!d) return d.status();
    if (!d->server_no_context_takeover) {
      // RFC 7692 7.1.1.1: a server that accepts an offer with it must answer with it.
      return protocol_error(
          "the server accepted permessage-deflate without server_no_context_takeover, which "
          "corral's offer asks for");
    }
    agreed.deflate = *d;
  }
  return agreed;
}

}  // namespace

std::vector<std::string> header_tokens(std::string_view value) {
  std::vector<std::string> out;
  for (std::string_view t : split(value, ',')) {
    if (!t.empty()) out.emplace_back(t);
  }
  return out;
}

std::string make_key() {
  std::array<unsigned char, 16> raw{};
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    // The key only has to differ between connections; it protects nothing.
    for (auto& b : raw) b = static_cast<unsigned char>(std::rand());
  }
  return base64(raw.data(), raw.size());
}

std::string accept_for(std::string_view key) {
  std::string text(key);
  text += kGuid;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha1(), nullptr);
  return base64(digest, len);
}

void append_request(const ClientHello& hello, std::string& out) {
  out += "GET ";
  out += hello.target.empty() ? "/" : hello.target;
  out += " HTTP/1.1\r\nHost: ";
  out += hello.host_header;
  out += "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n";
  out += "Sec-WebSocket-Key: ";
  out += hello.key;
  out += "\r\n";
  if (!hello.protocols.empty()) {
    out += "Sec-WebSocket-Protocol: ";
    for (size_t i = 0; i < hello.protocols.size(); ++i) {
      if (i > 0) out += ", ";
      out += hello.protocols[i];
    }
    out += "\r\n";
  }
  if (hello.offer_deflate) {
    out +=
        "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; "
        "server_no_context_takeover\r\n";
  }
  for (const std::string& h : hello.headers) {
    out += h;
    out += "\r\n";
  }
  out += "\r\n";
}

Result<Agreed> check_answer(int status, const http::HeaderList& headers, const ClientHello& hello) {
  if (status != 101) {
    return protocol_error("the server answered " + std::to_string(status) +
                          ", not 101 Switching Protocols");
  }
  std::string upgrade = joined(headers, "Upgrade").value_or("");
  if (!has_token(upgrade, "websocket")) {
    return protocol_error("the server's 101 has Upgrade: \"" + upgrade + "\", not websocket");
  }
  std::string connection = joined(headers, "Connection").value_or("");
  if (!has_token(connection, "upgrade")) {
    return protocol_error("the server's 101 has Connection: \"" + connection +
                          "\", without upgrade");
  }
  std::string expected = accept_for(hello.key);
  std::string accept(trim(joined(headers, "Sec-WebSocket-Accept").value_or("")));
  if (accept != expected) {
    return protocol_error("the server's Sec-WebSocket-Accept is \"" + accept + "\", not \"" +
                          expected + "\" (the answer to this connection's key)");
  }
  Agreed agreed;
  if (auto p = joined(headers, "Sec-WebSocket-Protocol"); p && !trim(*p).empty()) {
    agreed.protocol = std::string(trim(*p));
    if (std::find(hello.protocols.begin(), hello.protocols.end(), agreed.protocol) ==
        hello.protocols.end()) {
      return protocol_error("the server chose the subprotocol \"" + agreed.protocol +
                            "\", which corral did not offer");
    }
  }
  return check_extensions(headers, hello, std::move(agreed));
}

std::string deflate_answer(std::string_view offers) {
  for (std::string_view offer : split(offers, ',')) {
    std::vector<std::string_view> parts = split(offer, ';');
    if (parts.empty() || !http::iequals(trim(parts[0]), "permessage-deflate")) continue;
    bool usable = true;
    for (size_t i = 1; i < parts.size() && usable; ++i) {
      auto [name, value] = param(parts[i]);
      int bits = 15;
      if (http::iequals(name, "server_max_window_bits")) {
        usable = window_bits(value, bits) && bits == 15;  // corral's deflater keeps 32 KB
      } else if (http::iequals(name, "client_max_window_bits")) {
        usable = value.empty() || window_bits(value, bits);  // any window inflates with 15 bits
      } else {
        usable = http::iequals(name, "server_no_context_takeover") ||
                 http::iequals(name, "client_no_context_takeover");
      }
    }
    if (usable) {
      return "permessage-deflate; server_no_context_takeover; client_no_context_takeover";
    }
  }
  return "";
}

bool is_upgrade(const http::Request& req) {
  return req.method == "GET" && has_token(req.header("Upgrade"), "websocket");
}

Result<http::HeaderList> answer_upgrade(const http::Request& req,
                                        const std::vector<std::string>& supported) {
  if (!has_token(req.header("Connection"), "upgrade")) {
    return invalid_argument("a WebSocket request needs \"Connection: Upgrade\"");
  }
  if (trim(req.header("Sec-WebSocket-Version")) != "13") {
    return invalid_argument("a WebSocket request needs \"Sec-WebSocket-Version: 13\"");
  }
  std::string key(trim(req.header("Sec-WebSocket-Key")));
  if (key.size() != 24) {
    return invalid_argument("a WebSocket request needs a Sec-WebSocket-Key of 16 bytes in base64");
  }
  http::HeaderList h = {{"Upgrade", "websocket"},
                        {"Connection", "Upgrade"},
                        {"Sec-WebSocket-Accept", accept_for(key)}};
  for (const std::string& p : header_tokens(req.header("Sec-WebSocket-Protocol"))) {
    if (std::find(supported.begin(), supported.end(), p) != supported.end()) {
      h.emplace_back("Sec-WebSocket-Protocol", p);
      break;
    }
  }
  return h;
}

}  // namespace corral::ws
