#include "master/slot.h"

namespace corral::master {

std::string_view to_string(SlotState s) {
  switch (s) {
#define CORRAL_SLOT_CASE(name, text) \
  case SlotState::name:              \
    return text;
    CORRAL_SLOT_STATES(CORRAL_SLOT_CASE)
#undef CORRAL_SLOT_CASE
  }
  return "unknown";
}

std::string_view to_string(SuccessorState s) {
  switch (s) {
#define CORRAL_SUCCESSOR_CASE(name, text) \
  case SuccessorState::name:              \
    return text;
    CORRAL_SUCCESSOR_STATES(CORRAL_SUCCESSOR_CASE)
#undef CORRAL_SUCCESSOR_CASE
  }
  return "unknown";
}

bool has_process(SlotState s) {
  switch (s) {
    case SlotState::kStarting:
    case SlotState::kReady:
    case SlotState::kDraining:
    case SlotState::kStopping:
      return true;
    case SlotState::kExited:
    case SlotState::kBackoff:
    case SlotState::kErrored:
      return false;
  }
  return false;
}

bool can_transition(SlotState from, SlotState to) {
  using S = SlotState;
  switch (from) {
    case S::kStarting:
      return to == S::kReady || to == S::kStopping || to == S::kDraining || to == S::kExited;
    case S::kReady:
      return to == S::kStopping || to == S::kDraining || to == S::kExited;
    case S::kDraining:
      return to == S::kStopping || to == S::kExited;
    case S::kStopping:
      return to == S::kExited;
    case S::kExited:
      return to == S::kBackoff || to == S::kErrored || to == S::kReady;
    case S::kBackoff:
    case S::kErrored:
      return to == S::kStarting || to == S::kReady;
  }
  return false;
}

}  // namespace corral::master
