#include "client/tun/linux/tun_healing.hpp"

#include <linux/netfilter.h>
#include <net/if.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace quicstep::client::tun {
namespace {

constexpr long kCheckEveryNs = 500'000'000;  // as quicstepd's heal_interval
constexpr const char* kNftTable = "quicstep_tun";

}  // namespace

TunHealing::TunHealing(TunRouting routing) : routing_(std::move(routing)) {}

common::Outcome TunHealing::open() {
  if (auto opened = probe_.open(); !opened) return opened;
  if (auto opened = watch_.open(); !opened) return opened;
  timer_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  itimerspec every{};
  every.it_interval.tv_nsec = kCheckEveryNs;
  every.it_value.tv_nsec = kCheckEveryNs;
  if (!timer_.valid() || timerfd_settime(timer_.get(), 0, &every, nullptr) != 0) {
    return common::Failure(std::string("self-healing timer: ") + std::strerror(errno));
  }

  kernel::OwnedPiece rules;
  rules.piece = core::Piece::ip_rules;
  rules.present = [this] { return rules_present(); };
  rules.restore = [this] { return restore_rules(); };
  healer_.add(std::move(rules));

  kernel::OwnedPiece routes;
  routes.piece = core::Piece::channel_routes;
  routes.present = [this] { return routes_present(); };
  routes.restore = [this] { return install_device_routes(routing_); };
  healer_.add(std::move(routes));

  kernel::OwnedPiece table;
  table.piece = core::Piece::nft_table;
  table.present = [this] { return probe_.nft_table_exists(NFPROTO_INET, kNftTable); };
  table.restore = [this] { return install_guard(routing_); };
  healer_.add(std::move(table));
  healer_.check();  // the first reading: all present, as install_routes left them
  return {};
}

std::optional<bool> TunHealing::rules_present() {
  for (auto family : {common::IpFamily::v4, common::IpFamily::v6}) {
    const auto have = probe_.rule_priorities(family);
    if (!have) return std::nullopt;
    if (have->count(routing_.rule_priority) == 0) return false;
  }
  return true;
}

// Adds the rule of each family that has none; one still there is left alone.
common::Outcome TunHealing::restore_rules() {
  for (auto family : {common::IpFamily::v4, common::IpFamily::v6}) {
    const auto have = probe_.rule_priorities(family);
    if (have && have->count(routing_.rule_priority) != 0) continue;
    if (auto added = add_rule(routing_, family); !added) return added;
  }
  return {};
}

std::optional<bool> TunHealing::routes_present() {
  const unsigned ifindex = if_nametoindex(routing_.device.c_str());
  if (ifindex == 0) return std::nullopt;  // gone: nothing to route into
  for (const IpPrefix& p : routing_.addresses) {
    const common::IpFamily family = p.address.family;
    const std::optional<bool> routed = probe_.has_default_route(family, routing_.table, ifindex);
    if (!routed || !*routed) return routed;
    const auto addresses = probe_.global_addresses(family, ifindex);
    if (!addresses) return std::nullopt;
    const std::string want = p.address.to_string();
    if (std::find(addresses->begin(), addresses->end(), want) == addresses->end()) return false;
  }
  return true;
}

void TunHealing::on_route() {
  if (watch_.drain_route()) healer_.check();
}

void TunHealing::on_nft() {
  if (watch_.drain_nft()) healer_.check();
}

void TunHealing::on_timer() {
  std::uint64_t expirations = 0;
  [[maybe_unused]] const ssize_t r = ::read(timer_.get(), &expirations, sizeof expirations);
  healer_.check();
}

}  // namespace quicstep::client::tun
