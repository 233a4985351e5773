// An instance's variables as they travel from a worker to the master and back: in events,
// checkpoints and hand-backs, and so in the journal.
//
// In a worker, a variable holds what the server sent: a captured body or header may be any
// bytes, and may contain a secret's value. On the wire every text must be UTF-8 and no secret
// may appear, so the wire form is a JSON object with two reserved keys (a variable's name is
// an identifier, so no variable can be called "$..."):
//
//   {"job": "j-17", "items": [1, 2],
//    "token": "Bearer {{secret.API_KEY}}",          a secret's value, masked (shared/secrets.h)
//    "$secrets": {"token": ["API_KEY"]},            which secrets each masked variable held
//    "$bytes": {"raw": "ff00c3"}}                   a text that is not UTF-8, as hex
//
// to_wire() and from_wire() are exact inverses for top-level text values; a text nested
// inside a captured JSON value is UTF-8 already (it came from a parsed body). Pure, any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "shared/secrets.h"
#include "shared/status.h"

namespace corral::ipc {

// The wire form of `vars` (an object; anything else gives {}).
nlohmann::json vars_to_wire(const nlohmann::json& vars, const Secrets& secrets);
// The variables back from their wire form. Fails (kProtocol) when a reserved key is malformed.
Result<nlohmann::json> vars_from_wire(const nlohmann::json& wire, const Secrets& secrets);
// The wire form as shown to people (API answers, reports): masked secrets read "***", bytes
// that are not UTF-8 become U+FFFD, and the reserved keys are gone.
nlohmann::json vars_for_display(const nlohmann::json& wire);

}  // namespace corral::ipc
