// failure_text: the message of a failed Outcome, "" when it succeeded, so that a test can
// assert on the text a control-plane step produced (or print it).
#pragma once

#include <string>

#include "common/error.hpp"

namespace quicstep::test_support {

inline std::string failure_text(const common::Outcome& outcome) {
  return outcome.ok() ? std::string() : outcome.error().message;
}

}  // namespace quicstep::test_support
