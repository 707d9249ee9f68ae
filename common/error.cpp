#include "common/error.hpp"

namespace quicstep::common {

std::string_view to_string(Error error) {
  switch (error) {
    case Error::truncated: return "truncated";
    case Error::bad_value: return "bad_value";
    case Error::bad_length: return "bad_length";
    case Error::unsupported: return "unsupported";
    case Error::decrypt_failed: return "decrypt_failed";
    case Error::crypto_backend: return "crypto_backend";
    case Error::not_found: return "not_found";
    case Error::incomplete: return "incomplete";
    case Error::limit_exceeded: return "limit_exceeded";
  }
  return "unknown";
}

}  // namespace quicstep::common
