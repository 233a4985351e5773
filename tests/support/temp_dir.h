// A fresh directory under the system temp dir for one unit test, removed with everything in it
// when the TempDir goes away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

namespace corral::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/corral-cli-XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text` to the file `name` in this directory (replacing it, or as `mode` says) and
  // returns the file's path.
  std::string write(const std::string& name, const std::string& text,
                    std::ios::openmode mode = std::ios::trunc) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary | std::ios::out | mode) << text;
    return file;
  }

 private:
  std::string path_;
};

}  // namespace corral::test
