// No allocation on the packet path after warm-up: the global allocator is counted around
// hot loops of classify(), next_expiry(), on_expiry() and drain_events(). Also: a reloaded
// policy keeps the flows.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "client/core/classifier.hpp"
#include "client_packets.hpp"

namespace {
std::atomic<std::size_t> g_allocations{0};
}  // namespace

// Counting replacements of the global allocation functions (the sized/aligned forms of
// delete fall back to these in libstdc++).
void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC 12 at -O2 inlines these into std::allocator and then flags free() on memory from
// "operator new" (-Wmismatched-new-delete): a false positive, since the matching operator
// new above is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace quicstep::client::core {
namespace {

using namespace testing;  // NOLINT: the test packets
using common::Timestamp;

TEST(ClassifierAlloc, HotPathDoesNotAllocate) {
  Policy p;
  p.flows.capacity = 256;
  p.hold.packets = 1;
  Classifier c{p};
  std::vector<ByteVec> packets;
  for (std::uint16_t port = 1; port <= 600; ++port) {  // more flows than capacity: evictions
    packets.push_back(out4(port, initial_v1()));
    packets.push_back(in4(port, handshake_v1()));
    packets.push_back(out4(port, short_header()));
    packets.push_back(out4(port, short_header()));
    packets.push_back(in4(port, short_header()));
    packets.push_back(out6(port, short_header()));
    packets.push_back(udp4(port, 53, short_header()));
  }
  ASSERT_GT(g_allocations.load(), 0u);  // the counting allocator is the one in use
  std::vector<FlowEvent> events(32);
  std::int64_t t = 0;
  auto run = [&] {
    for (std::size_t i = 0; i < packets.size(); ++i) {
      // Inbound replies: odd ports answer on the native path, even ones never do.
      const bool odd = (i / 7) % 2 == 1;
      const auto dir = i % 7 == 1   ? Direction::inbound_channel
                       : i % 7 == 4 ? (odd ? Direction::inbound_native : Direction::inbound_channel)
                                    : Direction::outbound;
      (void)c.classify(packets[i], dir, Timestamp{t += 1'000'000});
      if (i % 50 == 0) {
        if (c.next_expiry() <= Timestamp{t}) c.on_expiry(Timestamp{t});
        while (c.drain_events(events) != 0) {
        }
      }
    }
  };
  run();  // warm-up
  const std::size_t before = g_allocations.load();
  for (int round = 0; round < 3; ++round) run();
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_GT(c.counters().failed_back + c.counters().confirmed, 0u);
  EXPECT_GT(c.counters().flows_evicted, 0u);
}

TEST(ClassifierAlloc, UpdatePolicyKeepsFlows) {
  Classifier c{Policy{}};
  (void)c.classify(out4(1, short_header()), Direction::outbound, Timestamp{0});
  Policy q;
  q.quic_ports = {443, 8443};
  q.hold.packets = 5;
  ASSERT_TRUE(c.update_policy(q));
  EXPECT_EQ(c.flow_count(), 1u);
  EXPECT_TRUE(c.is_quic_port(8443));
  EXPECT_EQ(c.classify(udp4(2, 8443, short_header()), Direction::outbound, Timestamp{1}).reason,
            Reason::hold);
  Policy r = q;
  r.flows.capacity = 10;
  EXPECT_FALSE(c.update_policy(r));
  EXPECT_EQ(c.policy().flows.capacity, Policy{}.flows.capacity);
}

}  // namespace
}  // namespace quicstep::client::core
