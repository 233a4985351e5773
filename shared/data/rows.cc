#include "shared/data/rows.h"

#include <csv.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace corral::data {
namespace {

using nlohmann::json;

// An index entry: where a good row starts in the file, its length, and its line.
struct Entry {
  uint64_t offset;
  uint32_t length;
  uint32_t line;
};
static_assert(sizeof(Entry) == 16);

std::string why(int err) { return std::strerror(err); }

bool is_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// libcsv with RFC 4180 rules: strict quotes, spaces kept.
class Csv {
 public:
  Csv() { init(); }
  ~Csv() { csv_free(&p_); }
  Csv(const Csv&) = delete;
  Csv& operator=(const Csv&) = delete;

  // Feeds text; false on a parse error. Sets ended() when a record ended in it.
  bool feed(std::string_view s) {
    return csv_parse(&p_, s.data(), s.size(), on_field, on_row, this) == s.size();
  }
  // The end of the input: ends a record left open; false when it cannot end (an open quote).
  bool finish() { return csv_fini(&p_, on_field, on_row, this) == 0; }
  std::string error() { return csv_strerror(csv_error(&p_)); }
  bool ended() const { return ended_; }
  std::vector<std::string>& fields() { return fields_; }
  void next() {
    fields_.clear();
    ended_ = false;
  }
  void reset() {
    csv_free(&p_);
    init();
    next();
  }

 private:
  void init() {
    csv_init(&p_, CSV_STRICT | CSV_STRICT_FINI);
    csv_set_space_func(&p_, [](unsigned char) { return 0; });
  }
  static void on_field(void* s, size_t n, void* me) {
    auto* self = static_cast<Csv*>(me);
    self->fields_.emplace_back(s != nullptr ? static_cast<const char*>(s) : "", s != nullptr ? n : 0);
  }
  static void on_row(int, void* me) { static_cast<Csv*>(me)->ended_ = true; }

  csv_parser p_{};
  std::vector<std::string> fields_;
  bool ended_ = false;
};

// The scan of one file: the lines it reads, the records they make, and what it writes.
class Scanner {
 public:
  Scanner(Format format, std::string path, std::FILE* index, std::string key)
      : format_(format), path_(std::move(path)), index_(index), key_(std::move(key)) {}

  Status line(std::string_view text) {
    ++line_no_;
    Status s = format_ == Format::kCsv ? csv_line(text) : jsonl_line(text);
    offset_ += text.size();
    return s;
  }
  Status end() {
    if (format_ == Format::kCsv && open_) {
      if (!csv_.finish()) {
        bad(record_line_, "not valid CSV: " + csv_.error());
      } else if (csv_.ended()) {
        if (Status s = record(offset_); !s) return s;
      }
    }
    if (scan_.columns.empty()) return fail(0, "no columns: the file is empty");
    return Status::ok();
  }
  Scan& result() { return scan_; }

 private:
  Status csv_line(std::string_view text) {
    if (!open_) {
      if (is_blank(text)) return Status::ok();
      open_ = true;
      record_start_ = offset_;
      record_line_ = line_no_;
    }
    if (!csv_.feed(text)) {
      bad(record_line_, "not valid CSV: " + csv_.error());
      csv_.reset();
      open_ = false;
      return Status::ok();
    }
    if (csv_.ended()) return record(offset_ + text.size());
    if (offset_ + text.size() - record_start_ > kMaxRowBytes) {
      bad(record_line_, "a record longer than 1MB (a quote that does not close?), lines " +
                            std::to_string(record_line_) + " to " + std::to_string(line_no_));
      csv_.reset();
      open_ = false;
    }
    return Status::ok();
  }

  // The CSV record that ends at `end` (its fields in csv_).
  Status record(uint64_t end) {
    open_ = false;
    std::vector<std::string> fields = std::move(csv_.fields());
    csv_.next();
    if (scan_.columns.empty()) return set_columns(std::move(fields));
    if (fields.size() != scan_.columns.size()) {
      bad(record_line_, std::to_string(fields.size()) + " fields, the header has " +
                            std::to_string(scan_.columns.size()));
      return Status::ok();
    }
    return good(record_start_, end - record_start_, record_line_);
  }

  Status jsonl_line(std::string_view text) {
    if (is_blank(text)) return Status::ok();
    if (text.size() > kMaxRowBytes) {
      bad(line_no_, "a line longer than 1MB");
      return Status::ok();
    }
    json row = json::parse(text, nullptr, false);
    if (row.is_discarded()) {
      bad(line_no_, "not JSON");
      return Status::ok();
    }
    if (!row.is_object()) {
      bad(line_no_, "expected a JSON object");
      return Status::ok();
    }
    if (scan_.columns.empty()) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : row.items()) keys.push_back(k);
      if (Status s = set_columns(std::move(keys)); !s) return s;
    }
    for (const std::string& c : scan_.columns) {
      if (!row.contains(c)) {
        bad(line_no_, "no \"" + c + "\" (the first row has it)");
        return Status::ok();
      }
    }
    return good(offset_, text.size(), line_no_);
  }

  Status set_columns(std::vector<std::string> names) {
    std::set<std::string> seen;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!is_name(names[i])) {
        return fail(record_line_, "column " + std::to_string(i + 1) + " \"" + names[i] +
                                      "\" is not a name (letters, digits and _, not first a digit)");
      }
      if (!seen.insert(names[i]).second) {
        return fail(record_line_, "two columns are called \"" + names[i] + "\"");
      }
    }
    if (names.empty()) return fail(record_line_, "no columns");
    if (!key_.empty() && !seen.count(key_)) {
      return fail(0, "the key column \"" + key_ + "\" is not one of its columns");
    }
    scan_.columns = std::move(names);
    return Status::ok();
  }

  Status good(uint64_t offset, uint64_t length, uint64_t line) {
    Entry e{offset, static_cast<uint32_t>(length), static_cast<uint32_t>(line)};
    if (std::fwrite(&e, sizeof e, 1, index_) != 1) {
      return Status(Code::kInternal, "cannot write the index of " + path_ + ": " + why(errno));
    }
    ++scan_.rows;
    return Status::ok();
  }

  void bad(uint64_t line, std::string error) {
    ++scan_.skipped;
    if (scan_.bad.size() < kMaxReported) scan_.bad.push_back({line, std::move(error)});
  }

  Status fail(uint64_t line, const std::string& what) const {
    return invalid_argument(path_ + (line != 0 ? " line " + std::to_string(line) : "") + ": " + what);
  }

  Format format_;
  std::string path_;
  std::FILE* index_;
  std::string key_;
  Scan scan_;
  Csv csv_;
  uint64_t offset_ = 0, line_no_ = 0;
  bool open_ = false;  // a CSV record is open
  uint64_t record_start_ = 0, record_line_ = 0;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

bool pread_all(int fd, void* buf, size_t n, uint64_t at) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    at += static_cast<uint64_t>(got);
  }
  return true;
}

}  // namespace

std::optional<Format> format_named(std::string_view name) {
  if (name == "csv") return Format::kCsv;
  if (name == "jsonl") return Format::kJsonl;
  return std::nullopt;
}

std::optional<Format> format_of_path(std::string_view path) {
  if (path.ends_with(".csv")) return Format::kCsv;
  if (path.ends_with(".jsonl") || path.ends_with(".ndjson")) return Format::kJsonl;
  return std::nullopt;
}

std::string_view to_string(Format f) { return f == Format::kCsv ? "csv" : "jsonl"; }

Result<Scan> scan(const std::string& path, Format format, const std::string& index_path,
                  const std::string& key) {
  File in(std::fopen(path.c_str(), "rb"));
  if (!in) return invalid_argument("cannot read " + path + ": " + why(errno));
  File index(std::fopen(index_path.c_str(), "wb"));
  if (!index) {
    return Status(Code::kInternal, "cannot write " + index_path + ": " + why(errno));
  }
  Scanner scanner(format, path, index.get(), key);
  char* buf = nullptr;
  size_t cap = 0;
  Status status = Status::ok();
  for (ssize_t n; status && (n = ::getline(&buf, &cap, in.get())) > 0;) {
    status = scanner.line(std::string_view(buf, static_cast<size_t>(n)));
  }
  const bool read_failed = std::ferror(in.get()) != 0;
  std::free(buf);
  if (!status) return status;
  if (read_failed) return invalid_argument("cannot read " + path + ": " + why(errno));
  if (Status s = scanner.end(); !s) return s;
  if (std::fflush(index.get()) != 0) {
    return Status(Code::kInternal, "cannot write " + index_path + ": " + why(errno));
  }
  return std::move(scanner.result());
}

Result<std::unique_ptr<RowFile>> RowFile::open(const std::string& path, Format format,
                                               const std::string& index_path,
                                               std::vector<std::string> columns) {
  std::unique_ptr<RowFile> f(new RowFile());
  f->format_ = format;
  f->path_ = path;
  f->columns_ = std::move(columns);
  f->data_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f->data_fd_ < 0) return invalid_argument("cannot read " + path + ": " + why(errno));
  f->index_fd_ = ::open(index_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f->index_fd_ < 0) return invalid_argument("cannot read " + index_path + ": " + why(errno));
  off_t size = ::lseek(f->index_fd_, 0, SEEK_END);
  if (size < 0) return invalid_argument("cannot read " + index_path + ": " + why(errno));
  f->rows_ = static_cast<uint64_t>(size) / sizeof(Entry);
  return f;
}

Result<std::unique_ptr<RowFile>> RowFile::open(const json& spec) {
  const auto columns = spec.is_object() ? spec.find("columns") : spec.end();
  auto format = spec.is_object() ? format_named(spec.value("format", "")) : std::nullopt;
  if (!format || columns == spec.end() || !columns->is_array()) {
    return invalid_argument("data: expected {\"path\", \"format\", \"index\", \"columns\"}");
  }
  std::vector<std::string> names;
  for (const auto& c : *columns) {
    if (!c.is_string()) return invalid_argument("data.columns: expected names");
    names.push_back(c.get<std::string>());
  }
  return open(spec.value("path", ""), *format, spec.value("index", ""), std::move(names));
}

RowFile::~RowFile() {
  if (data_fd_ >= 0) ::close(data_fd_);
  if (index_fd_ >= 0) ::close(index_fd_);
}

Result<json> RowFile::row(uint64_t i) const {
  const std::string which = "data row " + std::to_string(i);
  Entry e{};
  if (i >= rows_ || !pread_all(index_fd_, &e, sizeof e, i * sizeof e)) {
    return invalid_argument(which + ": not in the index of " + path_);
  }
  const std::string where = which + " (" + path_ + " line " + std::to_string(e.line) + ")";
  std::string text(e.length, '\0');
  if (!pread_all(data_fd_, text.data(), text.size(), e.offset)) {
    return invalid_argument(where + ": cannot be read: " + why(errno) + " (the file changed?)");
  }
  json out = json::object();
  if (format_ == Format::kJsonl) {
    json row = json::parse(text, nullptr, false);
    if (!row.is_object()) return invalid_argument(where + ": no longer a JSON object");
    for (const std::string& c : columns_) {
      if (!row.contains(c)) return invalid_argument(where + ": no \"" + c + "\" any more");
      out[c] = std::move(row[c]);
    }
    return out;
  }
  Csv csv;
  if (!csv.feed(text) || !csv.finish() || csv.fields().size() != columns_.size()) {
    return invalid_argument(where + ": no longer reads as it did (the file changed?)");
  }
  for (size_t k = 0; k < columns_.size(); ++k) out[columns_[k]] = std::move(csv.fields()[k]);
  return out;
}

Result<std::optional<uint64_t>> RowFile::find(const std::string& column,
                                               const std::string& value) const {
  for (uint64_t i = 0; i < rows_; ++i) {
    auto r = row(i);
    if (!r) return r.status();
    auto v = r->find(column);
    if (v == r->end()) continue;
    if ((v->is_string() ? v->get_ref<const std::string&>() : v->dump()) == value) return {i};
  }
  return std::optional<uint64_t>();
}

}  // namespace corral::data
