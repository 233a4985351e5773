// Data rows: the scan checks every row of a CSV or JSON Lines file and indexes the good ones,
// reporting the others by line; RowFile then reads any row by its number, from the file.
#include <catch2/catch.hpp>

#include "shared/data/rows.h"
#include "tests/support/temp_dir.h"

namespace corral::data {
namespace {

using nlohmann::json;

struct Scanned {
  Scan scan;
  std::unique_ptr<RowFile> file;
};

Scanned scan_ok(const test::TempDir& dir, const std::string& name, const std::string& text,
                const std::string& key = "") {
  std::string path = dir.write(name, text);
  Format f = *format_of_path(name);
  auto s = scan(path, f, path + ".idx", key);
  INFO((s ? "" : s.status().message()));
  REQUIRE(s.is_ok());
  auto file = RowFile::open(path, f, path + ".idx", s->columns);
  REQUIRE(file.is_ok());
  CHECK((*file)->rows() == s->rows);
  return {std::move(*s), std::move(*file)};
}

std::string scan_error(const test::TempDir& dir, const std::string& name, const std::string& text,
                       const std::string& key = "") {
  std::string path = dir.write(name, text);
  auto s = scan(path, *format_of_path(name), path + ".idx", key);
  REQUIRE_FALSE(s.is_ok());
  return s.status().message().substr(path.size());  // without the path it starts with
}

json row(const Scanned& s, uint64_t i) {
  auto r = s.file->row(i);
  INFO((r ? "" : r.status().message()));
  REQUIRE(r.is_ok());
  return *r;
}

TEST_CASE("data rows: CSV records follow RFC 4180, and bad ones are reported by line") {
  test::TempDir dir;
  Scanned s = scan_ok(dir, "rows.csv",
                      "email,name,note\n"                          // 1
                      "a@x.org,Ann,plain\n"                        // 2
                      "\n"                                         // 3: blank, skipped
                      "b@x.org,\"Bob, Jr.\",\"said \"\"hi\"\"\"\n"  // 4: quotes
                      "c@x.org,Cy\n"                               // 5: too few fields
                      "d@x.org,Di,\"two\nlines\"\n"                // 6-7: a line break inside
                      "e@x.org,\"Ed\"x,bad quote\n"                // 8: text after a quote
                      "f@x.org, Fay ,kept spaces\r\n"              // 9: CRLF
                      "g@x.org,Gus,no newline at the end");        // 10
  CHECK(s.scan.columns == std::vector<std::string>{"email", "name", "note"});
  CHECK(s.scan.rows == 5);
  CHECK(s.scan.skipped == 2);
  REQUIRE(s.scan.bad.size() == 2);
  CHECK(s.scan.bad[0].line == 5);
  CHECK(s.scan.bad[0].error == "2 fields, the header has 3");
  CHECK(s.scan.bad[1].line == 8);
  CHECK(s.scan.bad[1].error.rfind("not valid CSV", 0) == 0);
  CHECK(row(s, 0) == json{{"email", "a@x.org"}, {"name", "Ann"}, {"note", "plain"}});
  CHECK(row(s, 1) == json{{"email", "b@x.org"}, {"name", "Bob, Jr."}, {"note", "said \"hi\""}});
  CHECK(row(s, 2)["note"] == "two\nlines");
  CHECK(row(s, 3)["name"] == " Fay ");
  CHECK(row(s, 3)["note"] == "kept spaces");
  CHECK(row(s, 4)["note"] == "no newline at the end");
  CHECK_FALSE(s.file->row(5).is_ok());
  CHECK(s.file->find("email", "f@x.org").value() == std::optional<uint64_t>(3));  // a key's row
  CHECK(s.file->find("email", "c@x.org").value() == std::nullopt);  // on a bad row: none
}

TEST_CASE("data rows: an open quote costs one reported row, not the rest of the file") {
  test::TempDir dir;
  std::string text = "id,v\n1,\"never closed\n";
  for (int i = 0; i < 60000; ++i) text += std::to_string(i) + ",filler filler filler filler\n";
  Scanned s = scan_ok(dir, "rows.csv", text);
  REQUIRE(s.scan.bad.size() == 1);
  CHECK(s.scan.bad[0].line == 2);
  CHECK(s.scan.bad[0].error.find("longer than 1MB") != std::string::npos);
  CHECK(s.scan.rows > 0);  // the rows after the megabyte it swallowed
  CHECK(row(s, s.scan.rows - 1)["id"] == "59999");
}

TEST_CASE("data rows: JSON Lines keep their types, and every row needs the first row's keys") {
  test::TempDir dir;
  Scanned s = scan_ok(dir, "rows.jsonl",
                      R"({"email": "a@x.org", "n": 1, "tags": ["x"]})" "\n"
                      "\n"
                      "not json\n"
                      "[1, 2]\n"
                      R"({"email": "b@x.org"})" "\n"
                      R"({"email": "c@x.org", "n": 3, "tags": [], "extra": true})");
  CHECK(s.scan.columns == std::vector<std::string>{"email", "n", "tags"});
  CHECK(s.scan.rows == 2);
  REQUIRE(s.scan.bad.size() == 3);
  CHECK(s.scan.bad[0].line == 3);
  CHECK(s.scan.bad[0].error == "not JSON");
  CHECK(s.scan.bad[1].error == "expected a JSON object");
  CHECK(s.scan.bad[2].line == 5);
  CHECK(s.scan.bad[2].error == "no \"n\" (the first row has it)");
  CHECK(row(s, 0) == json{{"email", "a@x.org"}, {"n", 1}, {"tags", {"x"}}});
  CHECK(row(s, 1) == json{{"email", "c@x.org"}, {"n", 3}, {"tags", json::array()}});
}

TEST_CASE("data rows: files the scan refuses, naming the line and what is wrong") {
  test::TempDir dir;
  CHECK(scan_error(dir, "a.csv", "") == ": no columns: the file is empty");
  CHECK(scan_error(dir, "b.csv", "id,e-mail\n1,x\n") ==
        " line 1: column 2 \"e-mail\" is not a name (letters, digits and _, not first a digit)");
  CHECK(scan_error(dir, "c.csv", "id,id\n1,2\n") == " line 1: two columns are called \"id\"");
  CHECK(scan_error(dir, "d.csv", "id,v\n1,2\n", "email") ==
        ": the key column \"email\" is not one of its columns");
  auto missing = scan(dir.path() + "/none.csv", Format::kCsv, dir.path() + "/none.idx", "");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().message() == "cannot read " + dir.path() + "/none.csv: No such file or directory");
  CHECK(format_of_path("x.ndjson") == Format::kJsonl);
  CHECK_FALSE(format_of_path("x.txt"));
  CHECK(format_named("jsonl") == Format::kJsonl);
}

TEST_CASE("data rows: a row read after the file changed fails, naming its line") {
  test::TempDir dir;
  Scanned s = scan_ok(dir, "rows.csv", "id,v\n1,a\n2,b\n");
  dir.write("rows.csv", "id\n");  // shorter now
  auto r = s.file->row(1);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("data row 1 (" + dir.path() + "/rows.csv line 3)") == 0);
}

}  // namespace
}  // namespace corral::data
