#include "server_testbed/flood/lab_prefix.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace quicstep::server_testbed::flood {

namespace {

using common::Error;
using common::IpAddress;
using common::IpFamily;

unsigned max_length(IpFamily family) { return family == IpFamily::v4 ? 32 : 128; }

// Clears every bit of `a` after the first `length` bits.
IpAddress masked(IpAddress a, unsigned length) {
  const unsigned total = max_length(a.family) / 8;
  for (unsigned i = 0; i < total; ++i) {
    const unsigned bit = i * 8;
    if (bit >= length) {
      a.bytes[i] = 0;
    } else if (length - bit < 8) {
      a.bytes[i] &= static_cast<std::uint8_t>(0xff00u >> (length - bit));
    }
  }
  return a;
}

bool contains(const Prefix& outer, const IpAddress& a) {
  return a.family == outer.base.family && masked(a, outer.length) == outer.base;
}

const Prefix& lab_v4() {
  static const Prefix p{IpAddress::v4({198, 18, 0, 0}), 15};
  return p;
}

const Prefix& lab_v6() {
  static const Prefix p{IpAddress::v6({0x20, 0x01, 0x0d, 0xb8}), 32};
  return p;
}

}  // namespace

common::Result<Prefix, common::Failure> parse_prefix(std::string_view text) {
  auto fail = [&](const std::string& reason) -> common::Result<Prefix, common::Failure> {
    return common::Failure(reason + ": `" + std::string(text) + "'");
  };
  const auto slash = text.find('/');
  const std::string addr(text.substr(0, slash));
  Prefix p;
  std::array<std::uint8_t, 16> raw{};
  if (inet_pton(AF_INET, addr.c_str(), raw.data()) == 1) {
    p.base = IpAddress::v4({raw[0], raw[1], raw[2], raw[3]});
  } else if (inet_pton(AF_INET6, addr.c_str(), raw.data()) == 1) {
    p.base = IpAddress::v6(raw);
  } else {
    return fail("not an IPv4 or IPv6 address");
  }
  p.length = max_length(p.base.family);
  if (slash != std::string_view::npos) {
    const std::string_view len = text.substr(slash + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), value);
    if (len.empty() || ec != std::errc{} || end != len.data() + len.size() ||
        value > max_length(p.base.family)) {
      return fail("prefix length is not a number in 0.." +
                  std::to_string(max_length(p.base.family)));
    }
    p.length = value;
  }
  p.base = masked(p.base, p.length);
  return p;
}

bool inside_lab(const common::IpAddress& address) {
  return contains(lab_v4(), address) || contains(lab_v6(), address);
}

bool inside_lab(const Prefix& prefix) {
  const Prefix& lab = prefix.base.family == IpFamily::v4 ? lab_v4() : lab_v6();
  return prefix.length >= lab.length && contains(lab, prefix.base);
}

common::IpAddress random_address(const Prefix& prefix, std::mt19937_64& rng) {
  IpAddress a = prefix.base;
  const unsigned total = max_length(a.family) / 8;
  for (unsigned i = 0; i < total; ++i) {
    const unsigned bit = i * 8;
    if (bit + 8 <= prefix.length) continue;
    const auto r = static_cast<std::uint8_t>(rng());
    const std::uint8_t host_mask =
        bit >= prefix.length ? 0xff : static_cast<std::uint8_t>(0xffu >> (prefix.length - bit));
    a.bytes[i] = static_cast<std::uint8_t>((a.bytes[i] & ~host_mask) | (r & host_mask));
  }
  return a;
}

}  // namespace quicstep::server_testbed::flood
