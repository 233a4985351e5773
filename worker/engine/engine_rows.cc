// The engine's side of data rows (shared/data/rows.h): each instance of a run over a data file
// reads its row when it starts, on whichever worker, and its templates read it as
// {{row.<column>}}. Rows never travel in events or checkpoints.
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"

namespace corral::worker {

const nlohmann::json* Engine::row_value(const Instance& in, std::string_view column) const {
  auto it = rows_.find(root_of(in).serial);
  if (it == rows_.end()) return nullptr;
  auto v = it->second.find(column);
  return v == it->second.end() ? nullptr : &*v;
}

}  // namespace corral::worker
