// The web dashboard's files as the binary holds them: exactly the files in master/dashboard/,
// served with their type, an ETag that a 304 honours, and a policy that keeps the page on its
// own origin; and the files themselves name no other host and build no markup from strings.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "master/dashboard/assets.h"

namespace corral::master::dashboard {
namespace {

std::string source_file(const std::string& name) {
  std::ifstream in(std::string(CORRAL_SOURCE_DIR) + "/master/dashboard/" + name, std::ios::binary);
  std::stringstream whole;
  whole << in.rdbuf();
  return whole.str();
}

std::string header(const http::Response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST_CASE("dashboard files: the binary holds every file of master/dashboard, byte for byte") {
  std::set<std::string> on_disk;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(CORRAL_SOURCE_DIR) + "/master/dashboard")) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".html" || ext == ".js" || ext == ".css") on_disk.insert(entry.path().filename());
  }
  std::set<std::string> embedded;
  for (const EmbeddedFile& f : files()) {
    INFO(f.name);
    embedded.insert(std::string(f.name));
    CHECK(f.bytes == source_file(std::string(f.name)));
    CHECK(f.sha256.size() == 64);
  }
  CHECK(embedded == on_disk);
  CHECK(embedded.count("index.html") == 1);
  CHECK(embedded.count("app.js") == 1);
  CHECK(embedded.count("app.css") == 1);
}

TEST_CASE("dashboard files: found by exact name only") {
  REQUIRE(find_file("app.js") != nullptr);
  CHECK(find_file("app.js")->name == "app.js");
  CHECK(find_file("nope.js") == nullptr);
  CHECK(find_file("") == nullptr);
  CHECK(find_file("../app.js") == nullptr);
  CHECK(find_file("APP.JS") == nullptr);
}

TEST_CASE("dashboard files: the content type follows the extension") {
  CHECK(content_type_for("index.html") == "text/html; charset=utf-8");
  CHECK(content_type_for("app.js") == "text/javascript; charset=utf-8");
  CHECK(content_type_for("app.css") == "text/css; charset=utf-8");
  CHECK(content_type_for("logo.svg") == "image/svg+xml");
  CHECK(content_type_for("data.bin") == "application/octet-stream");
  CHECK(content_type_for("js") == "application/octet-stream");
}

TEST_CASE("dashboard files: 200 with an ETag and no-cache, 304 when the ETag is sent back") {
  const EmbeddedFile& f = *find_file("app.css");
  http::Response full = file_response(f, "");
  CHECK(full.status == 200);
  CHECK(full.content_type == "text/css; charset=utf-8");
  CHECK(full.body == f.bytes);
  const std::string etag = header(full, "ETag");
  CHECK(etag == "\"" + std::string(f.sha256.substr(0, 32)) + "\"");
  CHECK(header(full, "Cache-Control") == "no-cache");
  CHECK(header(full, "X-Content-Type-Options") == "nosniff");
  const std::string csp = header(full, "Content-Security-Policy");
  CHECK_THAT(csp, Catch::Contains("default-src 'none'"));
  CHECK_THAT(csp, Catch::Contains("script-src 'self';"));
  CHECK_THAT(csp, Catch::Contains("connect-src 'self';"));

  CHECK(file_response(f, etag).status == 304);
  CHECK(file_response(f, "W/\"x\", " + etag).status == 304);
  CHECK(file_response(f, "*").status == 304);
  CHECK(file_response(f, "\"0123\"").status == 200);
  // Another file has another ETag.
  CHECK(header(file_response(*find_file("app.js"), ""), "ETag") != etag);
}

TEST_CASE("dashboard files: no file names another host, so the page works offline") {
  for (const EmbeddedFile& f : files()) {
    std::string text(f.bytes);
    // The SVG namespace is a name that createElementNS needs, never fetched.
    for (size_t at; (at = text.find("http://www.w3.org/2000/svg")) != std::string::npos;) {
      text.erase(at, 26);
    }
    INFO(f.name);
    CHECK(text.find("http://") == std::string::npos);
    CHECK(text.find("https://") == std::string::npos);
    CHECK(text.find("src=\"//") == std::string::npos);
    CHECK(text.find("href=\"//") == std::string::npos);
    CHECK(text.find("@import") == std::string::npos);
  }
}

TEST_CASE("dashboard files: the scripts never parse strings as HTML") {
  for (const EmbeddedFile& f : files()) {
    if (!std::string_view(f.name).ends_with(".js")) continue;
    INFO(f.name);
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                             "eval(", "new Function", "createContextualFragment"}) {
      CHECK(std::string_view(f.bytes).find(sink) == std::string_view::npos);
    }
  }
}

}  // namespace
}  // namespace corral::master::dashboard
