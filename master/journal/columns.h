// How a journal table's columns map to the fields of its row struct (rows.h). Each table has
// one list of columns (tables.h); both stores use it to bind a row's values to the statement
// that writes it (bind_row) and to read rows out of a result by column name (RowReader), and
// sql.h makes from it the statements that write and read whole rows (columns_sql.h).
//
// A column's type is its field's: TEXT for a std::string, an integer for the others (a bool
// is 0 or 1). A number read is clamped to the column's range, then cast to the field's type.
// NULL (a LEFT JOIN without a match) reads as "" or 0.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace corral::master::journal {

// What the statement that writes a row does with a column.
enum class Write {
  kKey,     // written on insert; part of the key that ON CONFLICT names
  kOnce,    // written on insert, kept when the row is there already
  kAlways,  // written on insert, and replaced when the row is there already
  kNever,   // not written with the row (another statement sets it, or another table has it)
};

struct Range {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

template <typename Row>
struct Column {
  using Field = std::variant<std::string Row::*, int64_t Row::*, uint64_t Row::*, uint32_t Row::*,
                             int Row::*, bool Row::*>;

  const char* name;  // in the table, and in every result a row is read from
  Field field;
  Write write = Write::kOnce;
  Range range{};               // what a number read may be
  const char* from = nullptr;  // the SQL a query reads it with, when not the table's column

  bool text() const { return std::holds_alternative<std::string Row::*>(field); }
};

template <typename Row>
struct Table {
  const char* name;
  std::span<const Column<Row>> columns;
};

namespace detail {

inline const std::string& param(const std::string& v) { return v; }
template <std::integral T>
int64_t param(T v) {
  return static_cast<int64_t>(v);
}

}  // namespace detail

// Binds the values of `row` that its write sets (every column but kNever ones), in the table's
// order, to `params`: anything with bind(const std::string&) and bind(int64_t).
template <typename Row, typename Params>
void bind_row(const Table<Row>& table, const Row& row, Params& params) {
  for (const Column<Row>& c : table.columns) {
    if (c.write == Write::kNever) continue;
    std::visit([&](auto field) { params.bind(detail::param(row.*field)); }, c.field);
  }
}

// Reads rows of one table from a result whose columns it finds by name. `Cells` is a store's
// view of a result's current row: int column(const char* name) (its index, or -1 when the
// result has none of that name), int64_t i64(int column) and std::string text(int column).
template <typename Row>
class RowReader {
 public:
  // Finds each of the table's columns in the result; a column missing from it is a bug in the
  // journal's statements, which aborts.
  template <typename Cells>
  RowReader(const Table<Row>& table, const Cells& cells) : table_(table) {
    for (const Column<Row>& c : table.columns) {
      int at = cells.column(c.name);
      if (at < 0) {
        std::fprintf(stderr, "corral: a journal query reads no column %s of table %s\n", c.name,
                     table.name);
        std::abort();
      }
      at_.push_back(at);
    }
  }

  // The row the cells hold now.
  template <typename Cells>
  Row operator()(const Cells& cells) const {
    Row row;
    for (size_t i = 0; i < at_.size(); ++i) read(table_.columns[i], at_[i], cells, row);
    return row;
  }

 private:
  template <typename Cells>
  static void read(const Column<Row>& c, int at, const Cells& cells, Row& row) {
    std::visit(
        [&](auto field) {
          using T = std::remove_reference_t<decltype(row.*field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            row.*field = cells.text(at);
          } else if constexpr (std::is_same_v<T, bool>) {
            row.*field = cells.i64(at) != 0;
          } else {
            row.*field = static_cast<T>(std::clamp(cells.i64(at), c.range.min, c.range.max));
          }
        },
        c.field);
  }

  Table<Row> table_;
  std::vector<int> at_;  // each column's index in the result
};

}  // namespace corral::master::journal
