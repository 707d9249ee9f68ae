// The steering decision (bpf/steering_shared.h) run in user space: the same C code the BPF
// program runs, tested over tables and every truncated length.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "server_testbed/bpf/steering_shared.h"
#include "server_testbed/cid_codec.hpp"

namespace quicstep::server_testbed {
namespace {

using Bytes = std::vector<std::uint8_t>;

int decide(const Bytes& payload, const qs_steer_config& cfg, std::uint32_t* worker) {
  std::array<std::uint8_t, QS_STEER_BUF_LEN> buf{};
  std::copy_n(payload.begin(), std::min<std::size_t>(payload.size(), QS_STEER_PEEK_LEN),
              buf.begin());
  return qs_steer_decide(buf.data(), static_cast<std::uint32_t>(payload.size()), &cfg, worker);
}

Bytes our_cid(const CidCodec& codec, std::uint32_t worker) {
  Bytes cid(codec.cid_len());
  codec.encode(worker, Bytes(18, 0x5a), cid);
  return cid;
}

Bytes short_header(const Bytes& dcid, std::size_t tail = 24) {
  Bytes p{0x41};
  p.insert(p.end(), dcid.begin(), dcid.end());
  p.insert(p.end(), tail, 0xee);
  return p;
}

Bytes long_header(std::uint8_t first, std::uint32_t version, const Bytes& dcid,
                  std::size_t tail = 40) {
  Bytes p{first, static_cast<std::uint8_t>(version >> 24), static_cast<std::uint8_t>(version >> 16),
          static_cast<std::uint8_t>(version >> 8), static_cast<std::uint8_t>(version),
          static_cast<std::uint8_t>(dcid.size())};
  p.insert(p.end(), dcid.begin(), dcid.end());
  p.insert(p.end(), tail, 0x00);
  return p;
}

struct SteeringDecision : ::testing::Test {
  CidCodec codec = *CidCodec::create({0, 16, 4, std::nullopt});
  qs_steer_config cfg = to_bpf_config(codec.config(), true);
};

TEST_F(SteeringDecision, Table) {
  struct Row {
    const char* what;
    Bytes payload;
    int verdict;
    std::uint32_t worker;
  };
  const std::vector<Row> rows = {
      {"short header, worker 3", short_header(our_cid(codec, 3)), QS_STEER_WORKER, 3},
      {"short header, worker 0, fixed bit greased",
       [&] { auto p = short_header(our_cid(codec, 0)); p[0] = 0x01; return p; }(),
       QS_STEER_WORKER, 0},
      {"Handshake (v1), worker 2", long_header(0xe0, 1, our_cid(codec, 2)), QS_STEER_WORKER, 2},
      {"Initial after Retry, worker 1", long_header(0xc0, 1, our_cid(codec, 1)), QS_STEER_WORKER, 1},
      {"QUIC v2 long header, worker 1", long_header(0xd0, 0x6b3343cf, our_cid(codec, 1)),
       QS_STEER_WORKER, 1},
      {"unknown version, our DCID", long_header(0xc0, 0x1a2a3a4a, our_cid(codec, 3)),
       QS_STEER_WORKER, 3},
      {"client Initial, random 8-octet DCID",
       long_header(0xc0, 1, {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}), QS_STEER_FALLBACK, 0},
      {"Version Negotiation probe, empty DCID", long_header(0x80, 0, {}), QS_STEER_FALLBACK, 0},
      {"long header, DCID length 21", [] { Bytes p = long_header(0xc0, 1, Bytes(21, 1)); return p; }(),
       QS_STEER_MALFORMED, 0},
      {"long header, DCID length 255", [] { Bytes p = long_header(0xc0, 1, {}); p[5] = 255; return p; }(),
       QS_STEER_MALFORMED, 0},
      {"worker id beyond worker_count",
       [&] { auto c = our_cid(codec, 3); c[1] = 9; return short_header(c); }(), QS_STEER_FALLBACK, 0},
      {"config id 3 (unroutable)",
       [&] { auto c = our_cid(codec, 3); c[0] |= 0xc0; return short_header(c); }(), QS_STEER_FALLBACK, 0},
      {"empty payload", {}, QS_STEER_MALFORMED, 0},
      {"one octet", {0x40}, QS_STEER_MALFORMED, 0},
  };
  for (const Row& row : rows) {
    std::uint32_t worker = 99;
    EXPECT_EQ(decide(row.payload, cfg, &worker), row.verdict) << row.what;
    if (row.verdict == QS_STEER_WORKER) {
      EXPECT_EQ(worker, row.worker) << row.what;
    }
  }
}

TEST_F(SteeringDecision, LongHeaderDcidsOfEveryLength) {
  for (std::size_t n = 0; n <= 20; ++n) {
    std::uint32_t worker = 0;
    const int v = decide(long_header(0xe0, 1, Bytes(n, 0x7f)), cfg, &worker);
    EXPECT_EQ(v, QS_STEER_FALLBACK) << n;  // 0x7f: config 1, not ours
  }
}

// Every truncation of a steerable packet is either still steered (the DCID is complete) or
// malformed — never a wrong worker.
TEST_F(SteeringDecision, EveryTruncatedLength) {
  for (const Bytes& full : {short_header(our_cid(codec, 2)), long_header(0xe0, 1, our_cid(codec, 2))}) {
    const std::size_t dcid_end = (full[0] & 0x80) ? 6 + 16 : 1 + 16;
    for (std::size_t n = 0; n <= full.size(); ++n) {
      std::uint32_t worker = 99;
      const int v = decide(Bytes(full.begin(), full.begin() + static_cast<long>(n)), cfg, &worker);
      if (n >= dcid_end) {
        EXPECT_EQ(v, QS_STEER_WORKER) << n;
        EXPECT_EQ(worker, 2u) << n;
      } else {
        EXPECT_EQ(v, QS_STEER_MALFORMED) << n;
      }
    }
  }
}

TEST_F(SteeringDecision, DisabledNeverSelects) {
  cfg.enabled = 0;
  std::uint32_t worker = 0;
  EXPECT_EQ(decide(short_header(our_cid(codec, 1)), cfg, &worker), QS_STEER_DISABLED);
}

TEST_F(SteeringDecision, ObfuscatedCidsSteerToTheirWorker) {
  CidCodec obf = *CidCodec::create({1, 20, 8, 0xfeedfacecafebeefull});
  const qs_steer_config ocfg = to_bpf_config(obf.config(), true);
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const std::uint32_t w = static_cast<std::uint32_t>(rng() % 8);
    Bytes nonce(18);
    for (auto& b : nonce) b = static_cast<std::uint8_t>(rng());
    Bytes cid(20);
    obf.encode(w, nonce, cid);
    std::uint32_t worker = 99;
    ASSERT_EQ(decide(short_header(cid), ocfg, &worker), QS_STEER_WORKER);
    EXPECT_EQ(worker, w);
  }
}

TEST_F(SteeringDecision, RandomBytesNeverSelectABadWorker) {
  std::mt19937 rng(9);
  for (int i = 0; i < 20000; ++i) {
    Bytes p(rng() % 64);
    for (auto& b : p) b = static_cast<std::uint8_t>(rng());
    std::uint32_t worker = 0;
    if (decide(p, cfg, &worker) == QS_STEER_WORKER) {
      EXPECT_LT(worker, cfg.worker_count);
    }
  }
}

}  // namespace
}  // namespace quicstep::server_testbed
