// The GnuTLS priority strings of the project's QUIC endpoints: TLS 1.3 only (RFC 9001 §4.2),
// no middlebox compatibility mode (RFC 9001 §8.4), the AEADs QUIC defines, and the groups
// offered. Clients (quicstep-probe, quicstep-load) and the server share the protocol and
// cipher part; the server also accepts AES-128-CCM and P-521. Use with .data().
#pragma once

#include <array>
#include <cstddef>

namespace quicstep::quic {
namespace detail {

template <std::size_t A, std::size_t B>
constexpr std::array<char, A + B - 1> join(const char (&a)[A], const char (&b)[B]) {
  std::array<char, A + B - 1> out{};
  for (std::size_t i = 0; i + 1 < A; ++i) out[i] = a[i];
  for (std::size_t i = 0; i < B; ++i) out[A - 1 + i] = b[i];
  return out;
}

inline constexpr char kTls13Aeads[] =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
    "+AES-256-GCM:+CHACHA20-POLY1305";

}  // namespace detail

inline constexpr auto kClientPriority = detail::join(
    detail::kTls13Aeads, ":-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1");

inline constexpr auto kServerPriority = detail::join(
    detail::kTls13Aeads,
    ":+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1");

}  // namespace quicstep::quic
