// The engine's side of data rows (shared/data/rows.h): each instance of a run over a data file
// reads its row when it starts, on whichever worker, and its templates read it as
// {{row.<column>}}. Rows never travel in events or checkpoints.
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"

namespace corral::worker {

Result<std::unique_ptr<data::RowFile>> Engine::open_rows(const nlohmann::json& spec) {
  auto format = data::format_named(spec.value("format", ""));
  const auto& columns = spec.find("columns");
  if (!format || columns == spec.end() || !columns->is_array()) {
    return invalid_argument("data: expected {\"path\", \"format\", \"index\", \"columns\"}");
  }
  std::vector<std::string> names;
  for (const auto& c : *columns) {
    if (!c.is_string()) return invalid_argument("data.columns: expected names");
    names.push_back(c.get<std::string>());
  }
  return data::RowFile::open(spec.value("path", ""), *format, spec.value("index", ""),
                             std::move(names));
}

const nlohmann::json* Engine::row_value(const Instance& in, std::string_view column) const {
  auto it = rows_.find(root_of(in).serial);
  if (it == rows_.end()) return nullptr;
  auto v = it->second.find(column);
  return v == it->second.end() ? nullptr : &*v;
}

}  // namespace corral::worker
