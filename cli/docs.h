// docs/scenarios.md, compiled into the binary by cmake/embed_files.cmake for the scenario man
// page (cli/manual.cc). Defined by the source the build generates.
#pragma once

#include <span>

#include "shared/embedded_file.h"

namespace corral::cli::docs {

std::span<const EmbeddedFile> files();

}  // namespace corral::cli::docs
