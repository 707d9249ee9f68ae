#include "server_testbed/gate/mac_address.hpp"

namespace quicstep::server_testbed::gate {

namespace {
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<std::array<std::uint8_t, 6>> parse_mac(std::string_view text) {
  std::array<std::uint8_t, 6> mac{};
  std::size_t pos = 0;
  for (std::size_t i = 0; i < mac.size(); ++i) {
    if (i > 0) {
      if (pos >= text.size() || text[pos] != ':') return std::nullopt;
      ++pos;
    }
    int value = 0, digits = 0;
    while (pos < text.size() && digits < 2 && hex_digit(text[pos]) >= 0) {
      value = value * 16 + hex_digit(text[pos++]);
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    mac[i] = static_cast<std::uint8_t>(value);
  }
  if (pos != text.size()) return std::nullopt;
  bool zero = true;
  for (auto o : mac) zero = zero && o == 0;
  if (zero || (mac[0] & 0x01)) return std::nullopt;  // all-zero, or group (multicast/broadcast)
  return mac;
}

}  // namespace quicstep::server_testbed::gate
