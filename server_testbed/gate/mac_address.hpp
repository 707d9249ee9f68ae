// The next hop's MAC address given to quicstep-gate --tx-next-hop ("02:00:5e:10:00:01").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace quicstep::server_testbed::gate {

// Six hexadecimal octets separated by ':' (one or two digits each, either case); nullopt for
// anything else, including the all-zero and broadcast/multicast addresses (not a next hop).
std::optional<std::array<std::uint8_t, 6>> parse_mac(std::string_view text);

}  // namespace quicstep::server_testbed::gate
