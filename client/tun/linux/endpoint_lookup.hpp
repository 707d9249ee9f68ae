// look_up_endpoint: quicstep-tun's EndpointLookup (wg_quick_uapi.hpp). A wg-quick file's
// Endpoint may name its server (`vpn.example.net:51820`), as wg(8) accepts; the Linux
// frontend looks the name up once, before the engine starts and before its routes exist, so
// the lookup goes to the host's resolver natively, as wg-quick's does. The engine itself
// never looks a name up (on Android the app does, in Java).
//
// getaddrinfo with AI_ADDRCONFIG (a family the host has an address of), the first answer
// in its order (RFC 6724). A temporary failure (EAI_AGAIN: no network yet, at boot) is tried
// again, `attempts` times in all, a second apart, as wg(8) does.
//
// An engine that died (kill -9, a crash) leaves its TUN and rules, so that nothing leaves
// unprotected (tun_routes.hpp): a lookup then goes into a TUN nobody reads and can never be
// answered. So each name's address is kept while the engine runs (EndpointCache, a file in
// /run that a clean stop and --cleanup remove), and an engine started over the rules of one
// that died takes its names from there instead of looking them up.
#pragma once

#include <map>
#include <string>

#include "common/error.hpp"
#include "common/ip_packet.hpp"

namespace quicstep::client::tun {

common::Result<common::IpAddress, common::Failure> look_up_endpoint(const std::string& host,
                                                                    int attempts = 10);

// The names' addresses an engine with TUN `device` looked up: "/run/quicstep-tun-DEVICE.endpoints",
// a line "name address" each.
struct EndpointCache {
  std::string path;
  explicit EndpointCache(const std::string& device);
  // What the file holds (empty when it is missing or unreadable; bad lines are skipped).
  std::map<std::string, common::IpAddress> read() const;
  // Replaces the file (mode 0600); false when it could not be written.
  bool write(const std::map<std::string, common::IpAddress>& names) const;
  void remove() const;
};

}  // namespace quicstep::client::tun
