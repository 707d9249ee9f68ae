#include "server_testbed/cid_codec.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

namespace quicstep::server_testbed {
namespace {

using common::Error;

std::vector<std::uint8_t> random_bytes(std::mt19937& rng, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

TEST(CidCodec, RefusesBadConfigs) {
  const std::optional<std::uint64_t> none;
  EXPECT_EQ(CidCodec::create({3, 16, 1, none}).error(), Error::bad_value);
  EXPECT_EQ(CidCodec::create({0, 3, 1, none}).error(), Error::bad_value);
  EXPECT_EQ(CidCodec::create({0, 21, 1, none}).error(), Error::bad_value);
  EXPECT_EQ(CidCodec::create({0, 16, 0, none}).error(), Error::bad_value);
  EXPECT_EQ(CidCodec::create({0, 16, 65, none}).error(), Error::bad_value);
  EXPECT_EQ(CidCodec::create({0, 9, 1, 1}).error(), Error::bad_value);
  EXPECT_TRUE(CidCodec::create({0, 10, 1, 1}).ok());
  EXPECT_TRUE(CidCodec::create({2, 4, 64, none}).ok());
}

// Round trip for every length, worker, config id, plain and obfuscated.
TEST(CidCodec, RoundTripEveryLengthAndWorker) {
  std::mt19937 rng(7);
  for (std::optional<std::uint64_t> key : {std::optional<std::uint64_t>{},
                                           std::optional<std::uint64_t>{0x0123456789abcdefull}}) {
    for (std::uint8_t len = key ? 10 : 4; len <= 20; ++len) {
      for (std::uint8_t config_id = 0; config_id < 3; ++config_id) {
        auto codec = CidCodec::create({config_id, len, 64, key});
        ASSERT_TRUE(codec.ok());
        for (std::uint32_t w = 0; w < 64; ++w) {
          std::array<std::uint8_t, 20> cid{};
          codec->encode(w, random_bytes(rng, 18), cid);
          EXPECT_EQ(cid[0] >> 6, config_id);
          EXPECT_EQ((cid[0] & 0x3f) + 1, len);
          auto back = codec->decode(std::span<const std::uint8_t>(cid.data(), len));
          ASSERT_TRUE(back.ok()) << "len " << int(len) << " worker " << w;
          EXPECT_EQ(*back, w);
        }
      }
    }
  }
}

TEST(CidCodec, ObfuscationHidesTheWorkerId) {
  auto codec = CidCodec::create({0, 16, 4, 0x1122334455667788ull});
  ASSERT_TRUE(codec.ok());
  std::mt19937 rng(3);
  int clear = 0;
  for (int i = 0; i < 256; ++i) {
    std::array<std::uint8_t, 16> cid{};
    codec->encode(2, random_bytes(rng, 14), cid);
    if (cid[1] == 2) ++clear;
    EXPECT_EQ(*codec->decode(cid), 2u);
  }
  EXPECT_LT(clear, 16);  // about 1 in 256 by chance
}

TEST(CidCodec, DecodeRejectsForeignCids) {
  auto codec = CidCodec::create({1, 16, 4, std::nullopt});
  ASSERT_TRUE(codec.ok());
  std::array<std::uint8_t, 16> cid{};
  codec->encode(3, std::vector<std::uint8_t>(14, 0xab), cid);
  // Every truncated length, and one octet too many: not ours.
  for (std::size_t n = 0; n < cid.size(); ++n) {
    EXPECT_EQ(codec->decode(std::span<const std::uint8_t>(cid.data(), n)).error(),
              Error::not_found) << n;
  }
  std::array<std::uint8_t, 17> longer{};
  std::copy(cid.begin(), cid.end(), longer.begin());
  EXPECT_EQ(codec->decode(longer).error(), Error::not_found);
  auto other = cid;
  other[0] = static_cast<std::uint8_t>((2 << 6) | 15);  // another config id
  EXPECT_EQ(codec->decode(other).error(), Error::not_found);
  other = cid;
  other[0] = static_cast<std::uint8_t>((1 << 6) | 7);  // length bits disagree
  EXPECT_EQ(codec->decode(other).error(), Error::not_found);
  other = cid;
  other[1] = 4;  // worker beyond worker_count
  EXPECT_EQ(codec->decode(other).error(), Error::bad_value);
  std::array<std::uint8_t, 21> too_long{};
  EXPECT_EQ(codec->decode(too_long).error(), Error::not_found);
}

// Random client-chosen DCIDs (the first Initial) decode as "not ours" most of the time; when
// one happens to look like ours it names a valid worker, which is harmless (any worker may
// accept a new connection).
TEST(CidCodec, RandomDcidsRarelyLookOurs) {
  auto codec = CidCodec::create({0, 16, 4, std::nullopt});
  ASSERT_TRUE(codec.ok());
  std::mt19937 rng(11);
  int ours = 0;
  for (int i = 0; i < 10000; ++i) {
    auto dcid = random_bytes(rng, 8 + i % 13);
    if (codec->decode(dcid).ok()) ++ours;
  }
  EXPECT_LT(ours, 100);
}

TEST(CidCodec, BpfConfigMirrorsTheCodec) {
  const CidConfig cfg{2, 12, 8, 0x42ull};
  const qs_steer_config bpf = to_bpf_config(cfg, true);
  EXPECT_EQ(bpf.enabled, 1u);
  EXPECT_EQ(bpf.worker_count, 8u);
  EXPECT_EQ(bpf.config_id, 2);
  EXPECT_EQ(bpf.cid_len, 12);
  EXPECT_EQ(bpf.obfuscate, 1);
  EXPECT_EQ(bpf.key, 0x42ull);
  EXPECT_EQ(to_bpf_config(cfg, false).enabled, 0u);
}

}  // namespace
}  // namespace quicstep::server_testbed
