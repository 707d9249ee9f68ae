// quicstep-token: mints a universal token from a master key file, for tests and debugging
// (expired tokens, tokens for another address, Retry tokens for a chosen CID). Prints the
// token as PEM "QUIC TOKEN" (gtlsclient's --token-file format), or hex with --hex. With
// --send it also sends client Initials carrying the token (header, token and encryption
// real; the CRYPTO data is filler: enough for the gate, which reads the header and token).
#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/initial_protection.hpp"

#include "server_testbed/address_validator.hpp"
#include "server_testbed/token/master_key.hpp"
#include "server_testbed/token/universal_token.hpp"

namespace qt = quicstep::server_testbed::token;

namespace {

bool parse_hex(const std::string& text, std::vector<std::uint8_t>* out) {
  if (text.size() % 2 != 0 || text.size() > 40) return false;
  out->clear();
  for (std::size_t i = 0; i < text.size(); i += 2) {
    unsigned v = 0;
    if (std::sscanf(text.c_str() + i, "%2x", &v) != 1) return false;
    out->push_back(static_cast<std::uint8_t>(v));
  }
  return true;
}

// A v1 client Initial with dcid and token, padded to 1200 octets. Empty on error.
std::vector<std::uint8_t> build_initial(const std::vector<std::uint8_t>& dcid,
                                        std::span<const std::uint8_t> token) {
  namespace qc = quicstep::common;
  std::vector<std::uint8_t> frames = {0x06, 0x00, 0x40, 0x40};  // CRYPTO offset 0, 64 octets
  frames.resize(4 + 64, 0x16);
  const std::size_t overhead = 1 + 4 + 1 + dcid.size() + 1 + 8 + 2 + token.size() + 2 + 4 + 16;
  // PADDING to 1200 octets at least (the estimate may overcount varints by a few octets)
  if (overhead + frames.size() < 1210) frames.resize(1210 - overhead, 0x00);
  std::array<std::uint8_t, 8> scid{};
  gnutls_rnd(GNUTLS_RND_NONCE, scid.data(), scid.size());
  auto keys = qc::derive_initial_keys(1, dcid, qc::Perspective::client);
  if (!keys) return {};
  qc::InitialPacketSpec spec;
  spec.dcid = dcid;
  spec.scid = scid;
  spec.token = token;
  spec.payload = frames;
  auto pkt = qc::protect_initial(spec, *keys);
  return pkt ? *pkt : std::vector<std::uint8_t>{};
}

// Sends pkt `times` times to host:port, each from a new socket (a new source port), gap_ms
// apart. false on a socket error.
bool send_initials(const std::string& host, std::uint16_t port, const std::vector<std::uint8_t>& pkt,
                   int times, int gap_ms, bool same_port, const std::string& from) {
  sockaddr_storage to{};
  socklen_t to_len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&to);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&to);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    to_len = sizeof(*v4);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    to_len = sizeof(*v6);
  } else {
    return false;
  }
  int fd = -1;
  for (int i = 0; i < times; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    if (fd < 0) {
      fd = socket(to.ss_family, SOCK_DGRAM, 0);
      if (fd < 0) return false;
      if (!from.empty()) {  // the source address the token is bound to
        sockaddr_storage src{};
        auto* s4 = reinterpret_cast<sockaddr_in*>(&src);
        auto* s6 = reinterpret_cast<sockaddr_in6*>(&src);
        bool ok = false;
        if (to.ss_family == AF_INET && inet_pton(AF_INET, from.c_str(), &s4->sin_addr) == 1) {
          s4->sin_family = AF_INET;
          ok = bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(*s4)) == 0;
        } else if (to.ss_family == AF_INET6 &&
                   inet_pton(AF_INET6, from.c_str(), &s6->sin6_addr) == 1) {
          s6->sin6_family = AF_INET6;
          ok = bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(*s6)) == 0;
        }
        if (!ok) {
          close(fd);
          return false;
        }
      }
    }
    const bool ok = sendto(fd, pkt.data(), pkt.size(), 0, reinterpret_cast<sockaddr*>(&to),
                           to_len) == static_cast<ssize_t>(pkt.size());
    if (!same_port || !ok) {
      close(fd);
      fd = -1;
    }
    if (!ok) return false;
  }
  if (fd >= 0) close(fd);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-token: mint a universal token (tests)"};
  std::string key_file, type = "new_token", client, odcid_hex, rscid_hex;
  long long age_ms = 0;
  bool hex = false;
  std::string send_host, dcid_hex;
  std::uint16_t send_port = 443;
  int send_times = 1, send_gap_ms = 0;
  app.add_option("--master-key", key_file, "master key file (to mint)");
  app.add_option("--type", type, "retry | new_token");
  std::string token_pem;
  bool same_port = false;
  app.add_option("--client", client, "client IPv4 or IPv6 address the token is bound to");
  app.add_option("--token-pem", token_pem,
                 "--send: send this token (PEM QUIC TOKEN, e.g. gtlsclient's --token-file) "
                 "instead of minting one");
  app.add_flag("--same-port", same_port, "--send: every Initial from one socket (one port)");
  std::string send_from;
  app.add_option("--from", send_from, "--send: source address to bind (default: the route's)");
  app.add_option("--odcid", odcid_hex, "Retry: original DCID, hex (0-20 octets)");
  app.add_option("--rscid", rscid_hex, "Retry: Retry SCID = the client's next DCID, hex");
  app.add_option("--age-ms", age_ms, "issue the token this many ms in the past");
  app.add_flag("--hex", hex, "print hex instead of PEM");
  app.add_option("--send", send_host, "also send Initials with the token to this address");
  app.add_option("--port", send_port, "--send: UDP port");
  app.add_option("--dcid", dcid_hex, "--send: the Initial's DCID, hex (8-20 octets)");
  app.add_option("--times", send_times, "--send: how many Initials (each from a new port)")
      ->check(CLI::Range(1, 100));
  app.add_option("--gap-ms", send_gap_ms, "--send: pause between them")->check(CLI::Range(0, 10000));
  CLI11_PARSE(app, argc, argv);

  if (!token_pem.empty()) {
    std::ifstream in(token_pem, std::ios::binary);
    std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    gnutls_datum_t s{reinterpret_cast<unsigned char*>(pem.data()), static_cast<unsigned>(pem.size())};
    gnutls_datum_t d{};
    if (pem.empty() || gnutls_pem_base64_decode2("QUIC TOKEN", &s, &d) != 0) {
      std::cerr << "quicstep-token: --token-pem `" << token_pem << "': not a QUIC TOKEN PEM\n";
      return 2;
    }
    std::vector<std::uint8_t> given(d.data, d.data + d.size);
    gnutls_free(d.data);
    std::vector<std::uint8_t> dcid;
    if (!parse_hex(dcid_hex, &dcid) || dcid.size() < 8) {
      std::cerr << "quicstep-token: --dcid must be 8-20 octets of hex: `" << dcid_hex << "'\n";
      return 2;
    }
    const auto pkt = build_initial(dcid, given);
    return !pkt.empty() && send_initials(send_host, send_port, pkt, send_times, send_gap_ms, same_port, send_from)
               ? 0 : 1;
  }
  if (client.empty()) {
    std::cerr << "quicstep-token: --client is required to mint a token\n";
    return 2;
  }
  const auto loaded_key = qt::load_master_key(key_file);
  if (!loaded_key) {
    std::cerr << "quicstep-token: " << loaded_key.error().message << "\n";
    return 2;
  }
  const std::vector<std::uint8_t>& master = *loaded_key;
  sockaddr_storage ss{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, client.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, client.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
  } else {
    std::cerr << "quicstep-token: --client is not an IP address: `" << client << "'\n";
    return 2;
  }
  std::vector<std::uint8_t> odcid, rscid;
  if (!parse_hex(odcid_hex, &odcid) || !parse_hex(rscid_hex, &rscid)) {
    std::cerr << "quicstep-token: --odcid/--rscid must be 0-20 octets of hex\n";
    return 2;
  }
  auto codec = qt::TokenCodec::create(master, {});
  if (!codec) return 2;
  const std::uint64_t now = quicstep::server_testbed::wall_clock_ms() - static_cast<std::uint64_t>(age_ms);
  std::array<std::uint8_t, qt::kMaxTokenLen> tok{};
  const auto addr = qt::client_address(ss).value();
  std::size_t n = 0;
  if (type == "retry") {
    n = codec->issue_retry(tok, addr, odcid, rscid, now);
  } else if (type == "new_token") {
    n = codec->issue_new_token(tok, addr, now);
  } else {
    std::cerr << "quicstep-token: --type is not retry|new_token: `" << type << "'\n";
    return 2;
  }
  if (n == 0) return 1;
  if (!send_host.empty()) {
    std::vector<std::uint8_t> dcid;
    if (!parse_hex(dcid_hex, &dcid) || dcid.size() < 8) {
      std::cerr << "quicstep-token: --dcid must be 8-20 octets of hex: `" << dcid_hex << "'\n";
      return 2;
    }
    const auto pkt = build_initial(dcid, {tok.data(), n});
    if (pkt.empty() ||
        !send_initials(send_host, send_port, pkt, send_times, send_gap_ms, same_port, send_from)) {
      std::cerr << "quicstep-token: could not send to `" << send_host << "'\n";
      return 1;
    }
  }
  if (hex) {
    for (std::size_t i = 0; i < n; ++i) std::printf("%02x", tok[i]);
    std::printf("\n");
    return 0;
  }
  gnutls_datum_t in{tok.data(), static_cast<unsigned>(n)}, out{};
  if (gnutls_pem_base64_encode2("QUIC TOKEN", &in, &out) != 0) return 1;
  std::string pem(reinterpret_cast<char*>(out.data), out.size);
  if (pem.empty() || pem.back() != '\n') pem += '\n';
  std::cout << pem;
  gnutls_free(out.data);
  return 0;
}
