// The statements that write and read whole rows, made from a table's columns (columns.h), in
// the SQL that SQLite and PostgreSQL both take (sql.h). The parameters of a write are the
// row's values in its table's order (bind_row).
#pragma once

#include <string>
#include <string_view>

#include "master/journal/columns.h"

namespace corral::master::journal::sql {

namespace detail {

// The non-empty `each(column)` of a table's columns, separated by ", ".
template <typename Row, typename Each>
std::string joined(const Table<Row>& table, Each each) {
  std::string out;
  for (const Column<Row>& c : table.columns) {
    std::string part = each(c);
    if (part.empty()) continue;
    if (!out.empty()) out += ", ";
    out += part;
  }
  return out;
}

// INSERT INTO table (its written columns) `values` ON CONFLICT (its key) DO UPDATE SET each
// kAlways column to the new value, or DO NOTHING when it has none.
template <typename Row>
std::string upsert(const Table<Row>& table, const std::string& values) {
  auto written = [](const Column<Row>& c) {
    return std::string(c.write == Write::kNever ? "" : c.name);
  };
  auto key = [](const Column<Row>& c) { return std::string(c.write == Write::kKey ? c.name : ""); };
  auto set = [](const Column<Row>& c) {
    return c.write == Write::kAlways ? std::string(c.name) + " = excluded." + c.name : "";
  };
  std::string update = joined(table, set);
  return std::string("INSERT INTO ") + table.name + " (" + joined(table, written) + ") " + values +
         " ON CONFLICT (" + joined(table, key) + ") " +
         (update.empty() ? "DO NOTHING" : "DO UPDATE SET " + update);
}

}  // namespace detail

// What reads a row of the table: each column by its name (`from AS name` for one read from
// elsewhere), to follow "SELECT ".
template <typename Row>
std::string select_list(const Table<Row>& table) {
  return detail::joined(table, [](const Column<Row>& c) {
    return c.from ? std::string(c.from) + " AS " + c.name : std::string(c.name);
  });
}

// Writes a row: inserts it, or updates the row of its key as its columns' Write says.
template <typename Row>
std::string upsert(const Table<Row>& table) {
  auto param = [](const Column<Row>& c) {
    return std::string(c.write == Write::kNever ? "" : "?");
  };
  return detail::upsert(table, "VALUES (" + detail::joined(table, param) + ")");
}

// Writes many rows in one statement (PostgreSQL only): each column's values of every row as
// one array parameter (ArrayParams, pg_conn.h), unnested into rows. No two of the rows may
// have the same key: a statement cannot update a row twice.
template <typename Row>
std::string upsert_many(const Table<Row>& table) {
  auto param = [](const Column<Row>& c) {
    if (c.write == Write::kNever) return std::string();
    return std::string(c.text() ? "CAST(? AS TEXT[])" : "CAST(? AS BIGINT[])");
  };
  return detail::upsert(table, "SELECT * FROM unnest(" + detail::joined(table, param) + ")");
}

// The same, only when `condition` holds; its parameters are bound after the row's. The casts
// give PostgreSQL the parameters' types, which a bare SELECT list does not.
template <typename Row>
std::string upsert_if(const Table<Row>& table, std::string_view condition) {
  auto param = [](const Column<Row>& c) {
    if (c.write == Write::kNever) return std::string();
    return std::string(c.text() ? "CAST(? AS TEXT)" : "CAST(? AS BIGINT)");
  };
  return detail::upsert(
      table, "SELECT " + detail::joined(table, param) + " WHERE " + std::string(condition));
}

}  // namespace corral::master::journal::sql
