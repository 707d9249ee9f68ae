#include "server_testbed/load/loss_counter.hpp"

#include <gtest/gtest.h>

#include <string>

namespace quicstep::server_testbed {
namespace {

// Events in the shape ngtcp2 0.12.1's qlog writes them (one write per event).
std::string received(const char* type, int pn) {
  return std::string("\x1e{\"time\":1.5,\"name\":\"transport:packet_received\",\"data\":{\"header\":"
                     "{\"packet_type\":\"") + type + "\",\"packet_number\":" + std::to_string(pn) +
         ",\"dcid\":\"ab\"},\"frames\":[{\"frame_type\":\"ping\"}]}}\n";
}
std::string lost(int pn) {
  return "\x1e{\"time\":2,\"name\":\"recovery:packet_lost\",\"data\":{\"header\":"
         "{\"packet_type\":\"1RTT\",\"packet_number\":" + std::to_string(pn) + "}}}\n";
}

TEST(LossCounter, InOrderPacketsMissNothing) {
  LossCounter c;
  for (int pn = 0; pn < 10; ++pn) c.feed(received("1RTT", pn));
  EXPECT_EQ(c.counts().received, 10u);
  EXPECT_EQ(c.counts().missing, 0u);
  EXPECT_EQ(c.counts().declared_lost, 0u);
}

TEST(LossCounter, GapsAreMissingUntilTheyArriveLate) {
  LossCounter c;
  c.feed(received("1RTT", 0));
  c.feed(received("1RTT", 4));  // 1, 2, 3 missing
  EXPECT_EQ(c.counts().missing, 3u);
  c.feed(received("1RTT", 2));  // reordered, not lost
  EXPECT_EQ(c.counts().missing, 2u);
  c.feed(received("1RTT", 5));
  EXPECT_EQ(c.counts().missing, 2u);
}

TEST(LossCounter, FirstPacketNumberAboveZeroIsAGap) {
  LossCounter c;
  c.feed(received("1RTT", 3));
  EXPECT_EQ(c.counts().missing, 3u);
}

TEST(LossCounter, OtherPacketNumberSpacesAreIgnored) {
  LossCounter c;
  c.feed(received("initial", 0));
  c.feed(received("handshake", 7));
  EXPECT_EQ(c.counts().received, 0u);
  c.feed(received("1RTT", 0));
  EXPECT_EQ(c.counts().missing, 0u);
}

TEST(LossCounter, DeclaredLossesAndSeveralEventsInOneWrite) {
  LossCounter c;
  c.feed(lost(3) + received("1RTT", 0) + lost(4) + received("1RTT", 2));
  EXPECT_EQ(c.counts().declared_lost, 2u);
  EXPECT_EQ(c.counts().received, 2u);
  EXPECT_EQ(c.counts().missing, 1u);
}

TEST(LossCounter, TruncatedOrForeignTextIsIgnored) {
  LossCounter c;
  c.feed("");
  c.feed("{\"name\":\"transport:packet_received\",\"data\":{\"header\":{\"packet_type\":\"1RTT\"");
  c.feed("{\"name\":\"transport:packet_sent\",\"data\":{}}");
  c.feed("{\"name\":\"transport:packet_received\",\"data\":{\"header\":{\"packet_type\":\"1RTT\","
         "\"packet_number\":x}}}");
  EXPECT_EQ(c.counts().received, 0u);
  EXPECT_EQ(c.counts().declared_lost, 0u);
}

}  // namespace
}  // namespace quicstep::server_testbed
