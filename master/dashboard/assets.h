// The web dashboard's files (index.html, the scripts and the styles in this folder), compiled
// into the binary at build time by cmake/embed_files.cmake, and how the control API answers a
// request for one: GET / is index.html, GET /ui/<name> any of them (api_dashboard.cc).
// Everything here is static data and pure functions: any thread.
#pragma once

#include <span>
#include <string_view>

#include "shared/embedded_file.h"
#include "shared/http/message.h"

namespace corral::master::dashboard {

// Every file of the dashboard, in name order. Defined by the source the build generates.
std::span<const EmbeddedFile> files();

// The file called `name` ("app.js"), or nullptr when there is none.
const EmbeddedFile* find_file(std::string_view name);

// The Content-Type of a file by its extension: "text/html; charset=utf-8" for .html,
// "text/javascript; charset=utf-8" for .js (what a module script needs), "text/css;
// charset=utf-8" for .css, "image/svg+xml" for .svg; "application/octet-stream" otherwise.
std::string_view content_type_for(std::string_view name);

// The answer to a GET of `file` by a client that sent `if_none_match` (the If-None-Match header,
// "" when absent): 304 without a body when it names the file's ETag, else 200 with the bytes.
// Both carry the ETag (from the file's SHA-256), "Cache-Control: no-cache" (a browser asks
// again each time and gets a 304 while the binary is the same) and a Content-Security-Policy
// that lets the page load only its own scripts, styles and API: no other origin, no inline
// script.
http::Response file_response(const EmbeddedFile& file, std::string_view if_none_match);

}  // namespace corral::master::dashboard
