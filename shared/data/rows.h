// Data rows: a CSV or JSON Lines file whose rows each drive one instance of a run
// (`corral run FILE --data rows.csv`, docs/scenarios.md "Data rows").
//
// A file is read twice, never held in memory: once when the run is submitted, by scan(), which
// checks every row and writes an index of the good ones (where each starts, how long it is,
// its line); then row by row, by RowFile, on the worker that runs that row's instance. A row
// that does not parse is reported with its line number and left out; the others run.
//
//   CSV (RFC 4180): the first record names the columns; fields may be quoted ("a ""b"", c"),
//   and a quoted field may hold line breaks. Values are text, spaces kept.
//   JSON Lines: one JSON object per line; the first object's keys are the columns, and every
//   row must have them. Values keep their JSON type. Blank lines are skipped in both.
//
// Column names must be variable names (letters, digits, "_"): templates read them as
// {{row.<column>}}. Blocking file I/O: scan() off the loop, RowFile::row() is a few pread()s.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::data {

enum class Format { kCsv, kJsonl };
// "csv" or "jsonl"; nullopt for anything else.
std::optional<Format> format_named(std::string_view name);
// From the path's extension: .csv, .jsonl or .ndjson.
std::optional<Format> format_of_path(std::string_view path);
std::string_view to_string(Format f);

// A record longer than this is refused (an unclosed quote would otherwise swallow the file).
constexpr size_t kMaxRowBytes = 1 << 20;
// Bad rows reported one by one; the rest are counted.
constexpr size_t kMaxReported = 100;

struct BadRow {
  uint64_t line = 0;  // 1-based, where the row starts
  std::string error;  // "3 fields, the header has 4"
};

struct Scan {
  uint64_t rows = 0;                 // good rows, in the index in file order
  std::vector<std::string> columns;  // in file order
  uint64_t skipped = 0;              // bad rows
  std::vector<BadRow> bad;           // the first kMaxReported of them
};

// Reads `path` and writes the index of its good rows to `index_path` (created, replaced).
// Fails, naming the file, when it cannot be read or written, has no columns, a column is not a
// variable name, or `key` (when not empty) is not a column.
Result<Scan> scan(const std::string& path, Format format, const std::string& index_path,
                  const std::string& key);

// Row i of a scanned file, read when asked. Holds two file descriptors.
class RowFile {
 public:
  static Result<std::unique_ptr<RowFile>> open(const std::string& path, Format format,
                                               const std::string& index_path,
                                               std::vector<std::string> columns);
  // The same from a run's data spec, as the master keeps it and workers get it:
  // {"path", "format", "index", "columns": [...]}. Fails on a spec of another shape.
  static Result<std::unique_ptr<RowFile>> open(const nlohmann::json& spec);
  ~RowFile();
  RowFile(const RowFile&) = delete;
  RowFile& operator=(const RowFile&) = delete;

  uint64_t rows() const { return rows_; }
  // {"<column>": value, ...}; fails naming the row and its line when the file changed since
  // the scan and the row no longer reads.
  Result<nlohmann::json> row(uint64_t i) const;
  // The first row whose `column` reads `value` (a text value, or the JSON text of another),
  // reading the rows in order: the time a scan of the file takes.
  Result<std::optional<uint64_t>> find(const std::string& column, const std::string& value) const;

 private:
  RowFile() = default;
  Format format_ = Format::kCsv;
  std::string path_;
  std::vector<std::string> columns_;
  int data_fd_ = -1, index_fd_ = -1;
  uint64_t rows_ = 0;
};

}  // namespace corral::data
