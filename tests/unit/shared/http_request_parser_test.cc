// RequestParser alone: bytes in, events and requests or refusals out.
#include "shared/http/request_parser.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace corral::http {
namespace {

using Event = RequestParser::Event;
using Phase = RequestParser::Phase;

// Feeds `input` in pieces of `piece` bytes (0: all at once) and describes what came out, one
// line per event: "headers", "request GET /a?x=1 body=... keep-alive", "refused 400 ...".
std::vector<std::string> run(const std::string& input, size_t piece = 0) {
  RequestParser parser{ParseLimits{}};
  std::vector<std::string> events;
  std::string_view rest = input;
  while (!rest.empty()) {
    std::string_view chunk = rest.substr(0, piece == 0 ? rest.size() : piece);
    rest.remove_prefix(chunk.size());
    for (bool more = true; more;) {
      RequestParser::Step step = parser.feed(chunk);
      chunk.remove_prefix(step.consumed);
      switch (step.event) {
        case Event::kNeedMore:
          more = false;
          break;
        case Event::kHeaders:
          events.push_back(parser.expects_continue() ? "headers, expects 100" : "headers");
          break;
        case Event::kRequest: {
          Request r = std::move(parser.request());
          events.push_back("request " + r.method + " " + r.path + "?" + r.query +
                           " body=" + r.body + (parser.keep_alive() ? " keep-alive" : " close"));
          break;
        }
        case Event::kRefused:
          events.push_back("refused " + std::to_string(parser.refusal().status) + " " +
                           parser.refusal().message);
          return events;
      }
    }
  }
  return events;
}

// Feeds all of `in` to `parser`, and returns the events up to kNeedMore or kRefused.
std::vector<Event> feed_all(RequestParser& parser, std::string_view in) {
  std::vector<Event> events;
  for (;;) {
    RequestParser::Step step = parser.feed(in);
    in.remove_prefix(step.consumed);
    events.push_back(step.event);
    if (step.event == Event::kNeedMore || step.event == Event::kRefused) return events;
  }
}

Refusal refusal_of(const std::string& input, ParseLimits limits = {}) {
  RequestParser parser(limits);
  std::string_view rest = input;
  for (;;) {
    RequestParser::Step step = parser.feed(rest);
    rest.remove_prefix(step.consumed);
    if (step.event == Event::kRefused) return parser.refusal();
    if (step.event == Event::kNeedMore) return Refusal{};
  }
}

}  // namespace

TEST_CASE("http request parser: gives the same events however the bytes are split") {
  std::string input =
      "GET /a?x=1 HTTP/1.1\r\nHost: t\r\n\r\n"
      "\r\n"  // a stray CRLF between requests is allowed
      "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"
      "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
      "HEAD /d HTTP/1.0\r\n\r\n";
  std::vector<std::string> expected{
      "headers",
      "request GET /a?x=1 body= keep-alive",
      "headers, expects 100",
      "request POST /b? body=hello keep-alive",
      "headers",
      "request POST /c? body=abcde keep-alive",
      "headers",
      "request HEAD /d? body= close",
  };
  CHECK(run(input) == expected);
  for (size_t piece = 1; piece <= 16; ++piece) {
    INFO("pieces of " << piece << " bytes");
    CHECK(run(input, piece) == expected);
  }
}

TEST_CASE("http request parser: refuses what the server must not hand over, with its status") {
  ParseLimits small{200, 3, 10};
  struct Case {
    std::string input;
    int status;
    std::string message;
  };
  std::vector<Case> cases{
      {"GET /health\r\n", 400, "malformed HTTP request: the request line has no HTTP version"},
      {"GET /health?x=1\n", 400, "malformed HTTP request: the request line has no HTTP version"},
      {"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 505, "HTTP version not supported: HTTP/3.0"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "HTTP version not supported: HTTP/2.0"},
      {"GET / HTTP/1.2\r\nHost: t\r\n", 505, "HTTP version not supported: HTTP/1.2"},
      {"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431,
       "request has more than 3 headers"},
      {"GET / HTTP/1.1\r\nX: " + std::string(300, 'x') + "\r\n\r\n", 431,
       "request headers exceed 200 bytes"},
      {"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 413, "request body exceeds 10 bytes"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n", 413,
       "request body exceeds 10 bytes"},
      {"CONNECT /no-host HTTP/1.1\r\n\r\n", 400, "malformed HTTP request: invalid URL"},
      {"THIS IS NOT HTTP\r\n\r\n", 400,
       std::string("malformed HTTP request: ") + http_errno_description(HPE_INVALID_METHOD)},
  };
  for (const Case& c : cases) {
    INFO(c.input);
    Refusal r = refusal_of(c.input, small);
    CHECK(r.status == c.status);
    CHECK(r.message == c.message);
  }
  // At the caps exactly, nothing is refused.
  CHECK(refusal_of("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", small).status == 0);
  CHECK(refusal_of("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789", small).status == 0);
  CHECK(refusal_of("GET / HTTP/1.0\r\n\r\n", small).status == 0);
}

TEST_CASE("http request parser: a request line cut before its version is not taken for HTTP/0.9") {
  RequestParser parser{ParseLimits{}};
  using Events = std::vector<Event>;
  CHECK(feed_all(parser, "GET /health") == Events{Event::kNeedMore});
  CHECK(feed_all(parser, " HTTP/1.1\r\n\r\n") ==
        Events{Event::kHeaders, Event::kRequest, Event::kNeedMore});
  // A later request's URL cut at the end of the input keeps the previous request's version;
  // only the end of the line says that there is none.
  CHECK(feed_all(parser, "GET /next") == Events{Event::kNeedMore});
  CHECK(feed_all(parser, "\r\n") == Events{Event::kRefused});
  CHECK(parser.refusal().status == 400);
}

TEST_CASE("http request parser: reports its phase, and a refusal is final") {
  RequestParser parser{ParseLimits{}};
  CHECK(parser.phase() == Phase::kIdle);
  CHECK(parser.feed("\r\n").event == Event::kNeedMore);
  CHECK(parser.phase() == Phase::kIdle);  // stray CRLFs do not begin a request
  CHECK(parser.feed("POST / HTTP/1.1\r\nContent-Le").event == Event::kNeedMore);
  CHECK(parser.phase() == Phase::kHeaders);
  std::string_view rest = "ngth: 2\r\n\r\na";
  RequestParser::Step step = parser.feed(rest);
  CHECK(step.event == Event::kHeaders);
  CHECK(parser.phase() == Phase::kBody);
  rest.remove_prefix(step.consumed);
  CHECK(parser.feed(rest).event == Event::kNeedMore);
  CHECK(parser.phase() == Phase::kBody);
  CHECK(parser.feed("b").event == Event::kRequest);
  CHECK(parser.request().body == "ab");
  CHECK(parser.phase() == Phase::kIdle);

  CHECK(parser.feed("BAD\x01").event == Event::kRefused);
  CHECK(parser.refusal().status == 400);
  CHECK(parser.feed("GET / HTTP/1.1\r\n\r\n").event == Event::kRefused);
  CHECK(parser.feed("").event == Event::kRefused);
}

}  // namespace corral::http
