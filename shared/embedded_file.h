// A file compiled into the binary by cmake/embed_files.cmake (the web dashboard's assets): the
// generated source defines a function returning them all, as static data that lives as long as
// the program.
#pragma once

#include <string_view>

namespace corral {

struct EmbeddedFile {
  std::string_view name;    // the file's name, without its folder: "app.js"
  std::string_view bytes;   // exactly the file's bytes
  std::string_view sha256;  // of the bytes, 64 hex digits
};

}  // namespace corral
