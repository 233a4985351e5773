#include "worker/test_faults.h"

#include <cstdlib>
#include <utility>

#include "shared/test_hooks.h"

namespace corral::worker {
namespace {

constexpr std::pair<std::string_view, Fault> kFaults[] = {
    {"crash_at_start", Fault::kCrashAtStart}, {"init_fail", Fault::kInitFail},
    {"never_ready", Fault::kNeverReady},      {"hang", Fault::kHang},
    {"garbage_frame", Fault::kGarbageFrame},  {"bad_payload", Fault::kBadPayload},
    {"alloc_soft", Fault::kAllocSoft},        {"alloc_hard", Fault::kAllocHard},
    {"alloc_kernel", Fault::kAllocKernel},    {"throw", Fault::kThrow},
};

}  // namespace

Fault parse_fault(std::string_view spec, int slot) {
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    std::string_view kind = item;
    if (size_t at = item.find('@'); at != std::string_view::npos) {
      kind = item.substr(0, at);
      if (std::string(item.substr(at + 1)) != std::to_string(slot)) continue;
    }
    for (const auto& [name, fault] : kFaults) {
      if (kind == name) return fault;
    }
  }
  return Fault::kNone;
}

Fault fault_from_env(int slot) {
  const char* spec = test_hook("CORRAL_TEST_FAULT");
  return spec == nullptr ? Fault::kNone : parse_fault(spec, slot);
}

std::optional<uint32_t> poison_instance_from_env() {
  const char* v = test_hook("CORRAL_TEST_POISON_INSTANCE");
  if (v == nullptr || *v == '\0') return std::nullopt;
  return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
}

}  // namespace corral::worker
