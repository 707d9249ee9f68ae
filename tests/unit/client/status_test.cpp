// Status JSON (quicstepctl, control socket) and the Prometheus text built from it.
#include "client/daemon/status.hpp"

#include <gtest/gtest.h>

namespace quicstep::client::daemon {
namespace {

using core::Classifier;
using core::Policy;

TEST(Status, PathsComeFromKernelCountersAndRatioFromBytes) {
  Classifier c(Policy{});
  StatusSnapshot s;
  s.classifier = &c;
  s.kernel["channel_out"] = {10, 1000};
  s.kernel["native_out"] = {90, 99000};
  s.kernel["channel_in"] = {5, 1000};
  s.kernel["native_in"] = {50, 99000};
  s.channel_interface = "qsw-client";
  s.addressing = "nat";
  const auto j = status_json(s);
  EXPECT_EQ(j["paths"]["channel"]["bytes"], 1000u);
  EXPECT_EQ(j["paths"]["native"]["packets"], 90u);
  EXPECT_EQ(j["paths"]["native"]["in_bytes"], 99000u);
  // Both directions: (1000 + 1000) / (1000 + 1000 + 99000 + 99000).
  EXPECT_DOUBLE_EQ(j["channel_load_ratio"].get<double>(), 0.01);
  EXPECT_EQ(j["channel"]["interface"], "qsw-client");
  EXPECT_EQ(j["flows"]["tracked"], 0u);
  EXPECT_TRUE(j["watchdog"].contains("failed_back"));
  EXPECT_TRUE(j["watchdog"].contains("quiet_at_bound"));
}

TEST(Status, NoTrafficGivesZeroRatioNotNaN) {
  Classifier c(Policy{});
  StatusSnapshot s;
  s.classifier = &c;
  EXPECT_DOUBLE_EQ(status_json(s)["channel_load_ratio"].get<double>(), 0.0);
}

TEST(Status, MetricsTextHasOneHeaderPerMetricAndLabelledSamples) {
  Classifier c(Policy{});
  StatusSnapshot s;
  s.classifier = &c;
  s.kernel["channel_out"] = {3, 300};
  const std::string m = metrics_text(status_json(s));
  EXPECT_NE(m.find("# TYPE quicstep_path_bytes_total counter\n"), std::string::npos);
  EXPECT_NE(m.find("quicstep_path_bytes_total{path=\"channel\"} 300\n"), std::string::npos);
  EXPECT_NE(m.find("quicstep_path_bytes_total{path=\"native\"} 0\n"), std::string::npos);
  EXPECT_EQ(m.find("# TYPE quicstep_path_bytes_total"), m.rfind("# TYPE quicstep_path_bytes_total"));
  EXPECT_NE(m.find("quicstep_watchdog_events_total{event=\"failed_back\"} 0\n"), std::string::npos);
  EXPECT_NE(m.find("quicstep_watchdog_events_total{event=\"quiet_at_bound\"} 0\n"),
            std::string::npos);
  EXPECT_EQ(m.back(), '\n');
}

TEST(Status, RoutedSourceChangesAreAMetric) {
  Classifier c(Policy{});
  StatusSnapshot s;
  s.classifier = &c;
  nlohmann::json j = status_json(s);
  EXPECT_EQ(metrics_text(j).find("quicstep_native_source_changes_total"), std::string::npos);
  j["routed"] = {{"source_changes", 2}};  // the routed path's section (add_status_json)
  EXPECT_NE(metrics_text(j).find("\nquicstep_native_source_changes_total 2\n"),
            std::string::npos);
}

}  // namespace
}  // namespace quicstep::client::daemon
