// quicstep-retry-cost: user-space CPU per attack packet (a token-less v1 Initial of 1200
// octets, a fresh DCID each) for three Retry paths, on one core, side by side in one run:
//   host   what Worker::on_datagram + send_retry do per Initial (ngtcp2_accept, the shared
//          AddressValidator, gnutls_rnd for the SCID, ngtcp2_crypto_write_retry);
//   host+  the same with the gate's RetryWriter and RandomPool (what the workers would cost
//          with the gate's crypto set-up kept across packets);
//   gate   GateCore::on_datagram (the same work as host+, plus its counters).
// No system calls: the socket side (one sendmmsg per 64 Retries at the gate, one sendmsg per
// Retry in a worker) is measured by the flood benchmark. Alternating rounds, medians.
// Prints one JSON object. Usage: quicstep-retry-cost [--rounds N] [--packets N]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <gnutls/crypto.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/initial_protection.hpp"
#include "server_testbed/address_validator.hpp"
#include "server_testbed/bpf/steering_shared.h"
#include "server_testbed/cid_codec.hpp"
#include "server_testbed/gate/gate_core.hpp"
#include "server_testbed/gate/retry_writer.hpp"
#include "server_testbed/token/random_pool.hpp"

namespace qs = quicstep::server_testbed;
namespace qt = quicstep::server_testbed::token;
namespace qc = quicstep::common;

namespace {

constexpr std::uint64_t kNow = 1'780'000'000'000;

std::vector<std::vector<std::uint8_t>> make_initials(std::size_t n) {
  std::vector<std::vector<std::uint8_t>> out;
  std::vector<std::uint8_t> frames = {0x06, 0x00, 0x40, 0x40};
  frames.resize(1200, 0x00);
  const std::array<std::uint8_t, 8> scid = {1, 2, 3, 4, 5, 6, 7, 8};
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::uint8_t> dcid(8);
    gnutls_rnd(GNUTLS_RND_NONCE, dcid.data(), dcid.size());
    auto keys = qc::derive_initial_keys(1, dcid, qc::Perspective::client);
    qc::InitialPacketSpec spec;
    spec.dcid = dcid;
    spec.scid = scid;
    spec.payload = frames;
    out.push_back(qc::protect_initial(spec, *keys).value());
  }
  return out;
}

qt::TokenCodec codec() {
  return qt::TokenCodec::create(std::vector<std::uint8_t>(32, 9), {}).value();
}

sockaddr_storage client() {
  sockaddr_storage ss{};
  auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(40000);
  inet_pton(AF_INET, "198.18.220.2", &sin->sin_addr);
  return ss;
}

// The worker's per-Initial Retry work; improved = the gate's kept context and random pool.
struct HostPath {
  explicit HostPath(const qs::CidCodec& c) : cids(c), validator(codec(), true, tokens) {}
  const qs::CidCodec& cids;
  qs::TokenCounters tokens;
  qs::AddressValidator validator;
  qs::gate::RetryWriter writer;
  qt::RandomPool pool;
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> buf{};

  std::size_t run(const std::vector<std::uint8_t>& d, const sockaddr_storage& from,
                  bool improved) {
    ngtcp2_pkt_hd hd{};
    if (ngtcp2_accept(&hd, d.data(), d.size()) != 0) std::abort();
    if (validator.on_initial(hd, from, kNow).action != qs::AddressValidator::Action::send_retry) {
      std::abort();
    }
    std::array<std::uint8_t, QS_STEER_MAX_CID_LEN> random{};
    if (improved) {
      pool.fill(random.data(), random.size());
    } else {
      gnutls_rnd(GNUTLS_RND_NONCE, random.data(), random.size());
    }
    ngtcp2_cid scid{};
    scid.datalen = cids.cid_len();
    cids.encode(0, random, std::span<std::uint8_t>(scid.data, scid.datalen));
    std::array<std::uint8_t, qt::kMaxTokenLen> token{};
    const std::size_t toklen = validator.make_retry_token(token, from, hd.dcid, scid, kNow);
    const auto n = improved ? writer.write(buf.data(), buf.size(), hd.version, &hd.scid, &scid,
                                           &hd.dcid, token.data(), toklen)
                            : ngtcp2_crypto_write_retry(buf.data(), buf.size(), hd.version,
                                                        &hd.scid, &scid, &hd.dcid,
                                                        token.data(), toklen);
    if (n <= 0) std::abort();
    return static_cast<std::size_t>(n);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 9;
  std::size_t packets = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--packets") packets = static_cast<std::size_t>(std::atol(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--packets N]\n", argv[0]);
      return 2;
    }
  }
  if (rounds < 1 || packets < 1) return 2;
  const auto initials = make_initials(packets);
  const auto from = client();
  qs::CidCodec cids = qs::CidCodec::create({0, 16, 4, std::nullopt}).value();
  HostPath host(cids);
  qs::TokenCounters gate_tokens;
  qs::gate::GateCounters gate_counters;
  qs::gate::GateCore gate{cids, qs::AddressValidator(codec(), true, gate_tokens), gate_counters};

  using clock = std::chrono::steady_clock;
  auto per_packet_ns = [&](auto&& one) {
    const auto t0 = clock::now();
    std::size_t sink = 0;
    for (const auto& d : initials) sink += one(d);
    const auto t1 = clock::now();
    if (sink == 0) std::abort();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() /
           static_cast<double>(initials.size());
  };
  std::vector<double> h, hp, g;
  for (int r = 0; r < rounds; ++r) {
    h.push_back(per_packet_ns([&](const auto& d) { return host.run(d, from, false); }));
    hp.push_back(per_packet_ns([&](const auto& d) { return host.run(d, from, true); }));
    g.push_back(per_packet_ns([&](const auto& d) {
      const auto res = gate.on_datagram(d, from, kNow);
      if (res.kind != qs::gate::GateCore::Kind::retry) std::abort();
      return res.out.size();
    }));
  }
  const double mh = median(h), mhp = median(hp), mg = median(g);
  nlohmann::json out = {{"rounds", rounds}, {"packets_per_round", packets},
                        {"ns_per_packet_median", {{"host", mh}, {"host_improved", mhp},
                                                   {"gate", mg}}},
                        {"ns_per_packet_rounds", {{"host", h}, {"host_improved", hp},
                                                  {"gate", g}}},
                        {"ratio_host_over_gate", mh / mg},
                        {"ratio_host_improved_over_gate", mhp / mg}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
