// plan_verdicts: marks are never batched (a batch would also release packets whose queue
// message was lost, and those must keep their channel mark); unchanged runs are.
#include "net/verdict_plan.hpp"

#include <gtest/gtest.h>

namespace quicstep::net {
namespace {

using V = VerdictMessage;

std::vector<V> plan(std::vector<PendingVerdict> in) {
  std::vector<V> out = {{99, 1, false}};  // cleared first
  plan_verdicts(in, &out);
  return out;
}

TEST(VerdictPlan, Empty) { EXPECT_TRUE(plan({}).empty()); }

TEST(VerdictPlan, UnchangedRunIsOneBatchUpToItsLastId) {
  EXPECT_EQ(plan({{5, {}}, {6, {}}, {7, {}}}), (std::vector<V>{{7, std::nullopt, true}}));
}

TEST(VerdictPlan, MarksAreIndividualAndSplitRuns) {
  EXPECT_EQ(plan({{1, {}}, {2, {}}, {3, 0x52}, {4, {}}, {5, 0x52}, {6, 0x52}}),
            (std::vector<V>{{2, std::nullopt, true},
                            {3, 0x52, false},
                            {4, std::nullopt, true},
                            {5, 0x52, false},
                            {6, 0x52, false}}));
}

TEST(VerdictPlan, NoMessageEverCarriesAMarkAsABatch) {
  // Every pattern of 8 decisions: a batch never has a mark, each marked id has exactly one
  // individual message, and each unchanged id is covered by a later-or-equal batch id that
  // comes before any message for a larger marked id.
  for (unsigned bits = 0; bits < 256; ++bits) {
    std::vector<PendingVerdict> in;
    for (std::uint32_t i = 0; i < 8; ++i) {
      in.push_back({10 + i, (bits >> i) & 1 ? std::optional<std::uint32_t>(0x52) : std::nullopt});
    }
    const auto out = plan(in);
    std::uint32_t released = 0;  // ids below this are released
    for (const auto& m : out) {
      if (m.batch) {
        EXPECT_FALSE(m.mark.has_value());
        released = std::max(released, m.id + 1);
      } else {
        EXPECT_TRUE(m.mark.has_value());
        EXPECT_GE(m.id, released) << "a marked packet was already released by a batch";
      }
    }
    for (const auto& p : in) {
      if (!p.mark) {
        EXPECT_LT(p.id, released);
      }
    }
  }
}

TEST(VerdictPlan, NoBatchReachesAWaitingPacket) {
  // Packet 3 waits (deferred): unchanged 1-2 may be one batch, 4 and 6 must be individual.
  std::vector<V> out;
  plan_verdicts(std::vector<PendingVerdict>{{1, {}}, {2, {}}, {4, {}}, {5, 0x52}, {6, {}}}, &out,
                3u);
  EXPECT_EQ(out, (std::vector<V>{{2, std::nullopt, true},
                                 {4, std::nullopt, false},
                                 {5, 0x52, false},
                                 {6, std::nullopt, false}}));
}

}  // namespace
}  // namespace quicstep::net
