// RawInjector: sends whole IP packets (built by packet_forge) from the censor's namespace
// through two raw sockets, IPv4 (IP_HDRINCL) and IPv6 (IPPROTO_RAW implies the header is
// included). Injected packets leave through the OUTPUT path, so the censor's own FORWARD
// queue never sees them. RAII: the sockets close with the object.
#pragma once

#include <cstdint>
#include <string>

#include "common/byte_reader.hpp"
#include "common/error.hpp"

namespace quicstep::censor {

class RawInjector {
 public:
  RawInjector() = default;
  ~RawInjector();
  RawInjector(const RawInjector&) = delete;
  RawInjector& operator=(const RawInjector&) = delete;

  // Opens both sockets. Failures: the call and its errno text ("socket(AF_INET, SOCK_RAW):
  // Operation not permitted" without CAP_NET_RAW).
  common::Outcome open();

  // Sends one packet to its own destination address. Returns false (and counts it) on a
  // bad packet or a failed sendto; never throws, never blocks for long (ENOBUFS is counted).
  bool send(common::Bytes ip_packet);

  std::uint64_t sent() const { return sent_; }
  std::uint64_t errors() const { return errors_; }

 private:
  int fd4_ = -1;
  int fd6_ = -1;
  std::uint64_t sent_ = 0;
  std::uint64_t errors_ = 0;
};

}  // namespace quicstep::censor
