// The JSON form of what HandshakeObserver saw in one packet: quicstep-inspect prints one
// such object per line. Field names are part of the tool's interface (tests and the leak
// checks read them): add fields, don't rename them.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/handshake_observer.hpp"
#include "measurement/inspect/pcap_reader.hpp"

namespace quicstep::inspect {

// `index` counts frames from 1, as Wireshark does.
nlohmann::json packet_report(std::uint64_t index, const CapturedFrame& frame,
                             const common::Observation& seen);

// Lower-case hex of `bytes`.
std::string to_hex(common::Bytes bytes);

}  // namespace quicstep::inspect
