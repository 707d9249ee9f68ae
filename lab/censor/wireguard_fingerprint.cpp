#include "lab/censor/wireguard_fingerprint.hpp"

namespace quicstep::censor {

std::string_view to_string(WireGuardMessage m) {
  switch (m) {
    case WireGuardMessage::none: return "none";
    case WireGuardMessage::initiation: return "initiation";
    case WireGuardMessage::response: return "response";
    case WireGuardMessage::cookie_reply: return "cookie_reply";
    case WireGuardMessage::transport: return "transport";
  }
  return "?";
}

WireGuardMessage classify_wireguard(common::Bytes p) {
  if (p.size() < 4 || p[1] != 0 || p[2] != 0 || p[3] != 0) return WireGuardMessage::none;
  switch (p[0]) {
    case 1: return p.size() == 148 ? WireGuardMessage::initiation : WireGuardMessage::none;
    case 2: return p.size() == 92 ? WireGuardMessage::response : WireGuardMessage::none;
    case 3: return p.size() == 64 ? WireGuardMessage::cookie_reply : WireGuardMessage::none;
    case 4:
      return p.size() >= 32 && p.size() % 16 == 0 ? WireGuardMessage::transport
                                                  : WireGuardMessage::none;
    default: return WireGuardMessage::none;
  }
}

}  // namespace quicstep::censor
