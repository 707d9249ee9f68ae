// look_up_endpoint: quicstep-tun's EndpointLookup (wg_quick_uapi.hpp). A wg-quick file's
// Endpoint may name its server (`vpn.example.net:51820`), as wg(8) accepts; the Linux
// frontend looks the name up once, before the engine starts and before its routes exist, so
// the lookup goes to the host's resolver natively, as wg-quick's does. The engine itself
// never looks a name up (on Android the app does, in Java).
//
// getaddrinfo with AI_ADDRCONFIG (a family the host has an address of), the first answer
// in its order (RFC 6724). A temporary failure (EAI_AGAIN: no network yet, at boot) is tried
// again, `attempts` times in all, a second apart, as wg(8) does.
#pragma once

#include <string>

#include "common/error.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::client::tun {

common::Result<common::IpAddress, common::Failure> look_up_endpoint(const std::string& host,
                                                                    int attempts = 10);

}  // namespace quicstep::client::tun
