// Reading an array field of an answer whose elements are objects, for the answer models'
// readers (shared/api/*.cc): each element gets a FieldReader of its own, named by its place
// ("runs[2]"), and the first error stops the reading. Also an object field read as a map.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "shared/api/present.h"
#include "shared/ipc/fields.h"

namespace corral::api::detail {

// Calls each(reader, element) for the elements of the array field `name` of `j` (the object
// `r` reads), when present; a field that is not an array is an error.
template <typename Each>
void read_array(ipc::detail::FieldReader& r, const nlohmann::json& j, const char* name,
                Each&& each) {
  if (!r.ok() || !present(j, name)) return;
  if (!j[name].is_array()) return r.fail(name, "expected an array");
  for (size_t i = 0; i < j[name].size() && r.ok(); ++i) {
    ipc::detail::FieldReader e(j[name][i], r.path(name) + "[" + std::to_string(i) + "]");
    each(e, j[name][i]);
    r.take(e);
  }
}

// Calls each(reader, key) for the keys of the object field `name` of `j`, when present, with one
// FieldReader for the object (each reads its value by key); a field that is not an object is
// an error.
template <typename Each>
void read_entries(ipc::detail::FieldReader& r, const nlohmann::json& j, const char* name,
                  Each&& each) {
  if (!r.ok() || !present(j, name)) return;
  if (!j[name].is_object()) return r.fail(name, "expected an object");
  ipc::detail::FieldReader e(j[name], r.path(name));
  for (const auto& entry : j[name].items()) each(e, entry.key());
  r.take(e);
}

}  // namespace corral::api::detail
