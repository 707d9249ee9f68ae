#include "client/daemon/device_counters.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

#include "client/kernel/kernel_rules.hpp"

namespace quicstep::client::daemon {
namespace {

common::Result<std::uint64_t, common::Failure> read_counter(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!f || text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return common::Failure("cannot read a counter from " + path +
                           (text.empty() ? std::string() : " (`" + text + "')"));
  }
  return v;
}

}  // namespace

common::Result<core::WireGuardReading, common::Failure> read_device_counters(
    const std::string& interface, const std::string& sys_root) {
  const std::string dir = sys_root + "/class/net/" + interface + "/statistics/";
  auto rx = read_counter(dir + "rx_bytes");
  if (!rx) return rx.error();
  auto tx = read_counter(dir + "tx_bytes");
  if (!tx) return tx.error();
  core::WireGuardReading reading;
  reading.peers.push_back({"", 0, *rx, *tx});
  return reading;
}

common::Result<core::WireGuardReading, common::Failure> read_proxy_counters(const std::string& table) {
  const auto counters = kernel::read_kernel_counters(table);
  const auto in = counters.find("channel_in");
  const auto out = counters.find("channel_out");
  if (in == counters.end() || out == counters.end()) {
    return common::Failure("no channel counters in nft table inet " + table);
  }
  core::WireGuardReading reading;
  reading.peers.push_back({"", 0, in->second.bytes, out->second.bytes});
  return reading;
}

}  // namespace quicstep::client::daemon
