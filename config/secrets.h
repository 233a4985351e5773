// Where secrets come from: the daemon's environment (CORRAL_SECRET_<NAME>=value) and the
// `secrets_file`, a JSON object {"NAME": "value", ...} that only its owner may read (a file
// readable by its group or by others is refused: whoever can read it holds the secrets).
// The file wins over the environment for a name both give. Names are identifiers.
#pragma once

#include <string>

#include "shared/secrets.h"

namespace corral::config {

// Loads the secrets. Throws ConfigError naming the file or variable at fault. Start-up and
// SIGHUP only: it reads the disk.
Secrets load_secrets(const std::string& secrets_file);

}  // namespace corral::config
