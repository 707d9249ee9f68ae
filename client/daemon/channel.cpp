#include "client/daemon/channel.hpp"

#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "client/daemon/device_counters.hpp"
#include "client/daemon/key_file.hpp"
#include "client/daemon/wg_quick_file.hpp"
#include "client/daemon/wireguard_reading.hpp"
#include "client/kernel/kernel_probe.hpp"
#include "client/kernel/link_watch.hpp"
#include "net/process.hpp"

extern char** environ;

namespace quicstep::client::daemon {

using core::DaemonSettings;
using kernel::RulesetSpec;
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return f ? ss.str() : std::string();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  std::size_t i = s.find_first_not_of(" \t");
  return i == std::string::npos ? "" : s.substr(i);
}

std::string pid_file(const std::string& ifname) { return "/run/quicstep/" + ifname + ".wg.pid"; }

}  // namespace

common::Outcome Channel::attach(const DaemonSettings& s, RulesetSpec* spec) {
  interface_ = s.channel_interface;
  kind_ = s.channel_kind;
  exempt_v4_ = s.channel_exempt_v4;
  exempt_v6_ = s.channel_exempt_v6;
  if (kind_ == core::ChannelKind::wireguard && !s.wg_config.empty()) {
    if (auto up = bring_up(s); !up) {
      detach();
      return up;
    }
  }
  if (!net::run_process({"ip", "link", "show", "dev", interface_}).ok()) {
    return common::Failure(
        "channel interface " + interface_ + " does not exist (" +
        (kind_ == core::ChannelKind::interface
             ? "channel_kind = \"interface\": start the tunnel program that brings it up "
               "first"
             : "set daemon.wg_config to bring it up") +
        ")");
  }
  if (kind_ == core::ChannelKind::interface) {
    if (auto routed = add_routes(s); !routed) return routed;
  }
  choose_dns(s, spec->stateless);
  if (auto why = read_facts(spec); !why) {
    detach();
    return why;
  }
  if (kind_ == core::ChannelKind::tproxy) {
    tproxy_port_ = s.tproxy_port;
    // Opened now: the system-call filter allows no new netlink socket later.
    if (auto opened = proxy_sockets_.open_lookup(); !opened) {
      spdlog::warn("cannot look up the proxy client's socket ({}): judged by its counters only",
                   opened.error().message);
    }
  }
  return {};
}

void Channel::choose_dns(const DaemonSettings& s, bool stateless) {
  const auto first = [](const std::vector<std::string>& v) {
    return v.empty() ? std::string() : v.front();
  };
  const bool from_file = !s.channel_dns_set;
  dns_v4_ = first(from_file ? file_dns_v4_ : s.channel_dns_v4);
  dns_v6_ = first(from_file ? file_dns_v6_ : s.channel_dns_v6);
  if (dns_v4_.empty() && dns_v6_.empty()) return;
  const std::string which = dns_v4_ + (dns_v4_.empty() || dns_v6_.empty() ? "" : ", ") + dns_v6_;
  if (!stateless) {
    // The config refuses channel_dns then; the file's DNS line is only unused.
    spdlog::warn("the DNS line of {} ({}) is not used: only stateless addressing sends the "
                 "channel's DNS queries there; they keep the host's resolver",
                 s.wg_config, which);
    dns_v4_.clear();
    dns_v6_.clear();
    return;
  }
  spdlog::info("DNS queries entering the channel go to {} ({})", which,
               from_file ? "the DNS line of " + s.wg_config : std::string("channel_dns"));
}

common::Outcome Channel::add_routes(const DaemonSettings& s) {
  routing_table_ = s.routing_table;
  std::string why;
  int added = 0;
  for (const char* fam : {"-4", "-6"}) {
    const std::vector<std::string> cmd{"ip", fam, "route", "replace", "default", "dev",
                                       interface_, "table", std::to_string(routing_table_)};
    if (auto r = net::run_process(cmd); r.ok()) {
      ++added;
    } else if (why.empty()) {
      why = net::describe(cmd, r);
    }
  }
  if (added == 0) return common::Failure(why);
  routes_added_ = true;
  return {};
}

common::Outcome Channel::read_facts(RulesetSpec* spec) const {
  spec->exempt_v4.clear();
  spec->exempt_v6.clear();
  spec->tunnel_v4.clear();
  spec->tunnel_v6.clear();
  spec->channel_sources_v4.clear();
  spec->channel_sources_v6.clear();
  // A WireGuard channel's peer endpoints; an interface channel's tunnel servers are only
  // known from channel_exempt (added below, to both kinds).
  const auto eps = kind_ == core::ChannelKind::wireguard
                       ? net::run_process({"wg", "show", interface_, "endpoints"})
                       : net::ProcessResult{};
  std::istringstream lines(eps.output);
  for (std::string line; std::getline(lines, line);) {
    // "<peer key>\t<addr>:<port>" or "[v6]:port" or "(none)"
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string ep = line.substr(tab + 1);
    if (!ep.empty() && ep[0] == '[') {
      spec->exempt_v6.push_back(ep.substr(1, ep.find(']') - 1));
    } else if (auto colon = ep.rfind(':'); colon != std::string::npos) {
      spec->exempt_v4.push_back(ep.substr(0, colon));
    }
  }
  for (auto [from, to] : {std::pair{&exempt_v4_, &spec->exempt_v4},
                          std::pair{&exempt_v6_, &spec->exempt_v6}}) {
    for (const auto& a : *from) {
      if (std::find(to->begin(), to->end(), a) == to->end()) to->push_back(a);
    }
  }
  spec->channel_dns_v4 = dns_v4_;
  spec->channel_dns_v6 = dns_v6_;
  if (kind_ == core::ChannelKind::tproxy) return {};  // the proxy client sends: no rewrite
  // The tunnel addresses (stateless addressing writes them itself): the first global one
  // of each family, read as the daemon's heal check reads them (first_global_address), so
  // that the two never disagree.
  kernel::KernelProbe probe;
  if (auto opened = probe.open(); !opened) return opened;
  const unsigned ifindex = if_nametoindex(interface_.c_str());
  if (ifindex == 0) return common::Failure("channel interface " + interface_ + " is gone");
  for (auto [family, first, all] :
       {std::tuple{common::IpFamily::v4, &spec->tunnel_v4, &spec->channel_sources_v4},
        std::tuple{common::IpFamily::v6, &spec->tunnel_v6, &spec->channel_sources_v6}}) {
    std::optional<std::vector<std::string>> addresses = probe.global_addresses(family, ifindex);
    if (!addresses) return common::Failure("cannot read the addresses of " + interface_);
    *first = addresses->empty() ? std::string() : addresses->front();
    *all = std::move(*addresses);
  }
  if (spec->nat && spec->stateless && spec->tunnel_v4.empty() && spec->tunnel_v6.empty()) {
    return common::Failure("stateless addressing: the channel interface " + interface_ +
                           " has no global address");
  }
  return {};
}

common::Outcome Channel::reattach(RulesetSpec* spec) {
  return read_facts(spec);
}

common::Outcome Channel::bring_up(const DaemonSettings& s) {
  if (auto warning = world_accessible_warning(s.wg_config)) spdlog::warn("{}", *warning);
  const std::string text = read_file(s.wg_config);
  if (text.empty()) return common::Failure("cannot read " + s.wg_config);
  // wg-quick's own keys, which `wg setconf` refuses: Address and MTU go to `ip`, DNS to the
  // channel's DNS (attach), the rest is unused.
  WgQuickFile file = split_wg_quick(text);
  const std::string& wg_text = file.wg_text;
  const std::vector<std::string>& addresses = file.addresses;
  const std::string& mtu = file.mtu;
  file_dns_v4_ = file.dns_v4;
  file_dns_v6_ = file.dns_v6;
  ::mkdir("/run/quicstep", 0755);
  std::vector<std::string> argv = {"wireguard-go", "-f", s.channel_interface};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  if (posix_spawnp(&wg_pid_, "wireguard-go", nullptr, nullptr, args.data(), environ) != 0) {
    return common::Failure("cannot start wireguard-go");
  }
  std::ofstream(pid_file(s.channel_interface)) << wg_pid_ << "\n";
  created_ = true;
  interface_ = s.channel_interface;
  const std::string sock = "/var/run/wireguard/" + s.channel_interface + ".sock";
  for (int i = 0; i < 100 && ::access(sock.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string tmp = "/run/quicstep/" + s.channel_interface + ".wg.conf";
  if (auto written = write_private_file(tmp, wg_text); !written) return written;
  auto r = net::run_process({"wg", "setconf", s.channel_interface, tmp});
  ::unlink(tmp.c_str());
  if (!r.ok()) return common::Failure(net::describe({"wg", "setconf", s.channel_interface}, r));
  for (const auto& a : addresses) {
    if (auto r2 = net::run_process({"ip", "address", "add", a, "dev", s.channel_interface}); !r2.ok()) {
      return common::Failure(net::describe({"ip", "address", "add", a}, r2));
    }
  }
  if (!mtu.empty() && !net::run_process({"ip", "link", "set", s.channel_interface, "mtu", mtu}).ok()) {
    return common::Failure("bad MTU `" + mtu + "' in " + s.wg_config);
  }
  net::run_process({"ip", "link", "set", s.channel_interface, "up"});
  addresses_ = addresses;
  routing_table_ = s.routing_table;
  for (const char* fam : {"-4", "-6"}) {
    net::run_process({"ip", fam, "route", "replace", "default", "dev", s.channel_interface, "table",
                 std::to_string(s.routing_table)});
  }
  return {};
}

common::Outcome Channel::restore_routes() {
  if (!owns_routes()) return {};
  for (const auto& a : addresses_) {
    net::run_process({"ip", "address", "replace", a, "dev", interface_});  // kept if still there
  }
  std::string why;
  for (const char* fam : {"-4", "-6"}) {
    const std::vector<std::string> cmd{"ip", fam, "route", "replace", "default", "dev", interface_,
                                       "table", std::to_string(routing_table_)};
    if (auto r = net::run_process(cmd); !r.ok() && why.empty()) why = net::describe(cmd, r);
  }
  if (why.empty()) return {};
  return common::Failure(why);
}

void Channel::detach() {
  if (routes_added_) {
    routes_added_ = false;
    for (const char* fam : {"-4", "-6"}) {
      net::run_process({"ip", fam, "route", "del", "default", "dev", interface_, "table",
                        std::to_string(routing_table_)});
    }
  }
  if (!created_) return;
  created_ = false;
  net::run_process({"ip", "link", "del", interface_});
  if (wg_pid_ > 0) {
    ::kill(wg_pid_, SIGTERM);
    ::waitpid(wg_pid_, nullptr, 0);
    wg_pid_ = -1;
  }
  ::unlink(pid_file(interface_).c_str());
}

std::string Channel::describe() const {
  return kind_ == core::ChannelKind::tproxy
             ? "the proxy client at port " + std::to_string(tproxy_port_)
             : "channel interface " + interface_;
}

bool Channel::is_up(bool device_seen) {
  if (kind_ != core::ChannelKind::tproxy) return device_seen && kernel::link_is_up(interface_);
  if (!proxy_sockets_.is_open()) return true;
  std::array<std::uint8_t, 16> v6_loopback{};
  v6_loopback[15] = 1;
  bool unknown = false;
  for (const common::IpAddress& address : {common::IpAddress::v4({127, 0, 0, 1}),
                                           common::IpAddress::v6(v6_loopback)}) {
    // A datagram from the same address's port 9 (discard) to the proxy's port.
    const common::FlowKey to_proxy{address, address, tproxy_port_, 9, IPPROTO_UDP};
    const std::optional<bool> found = proxy_sockets_.may_carry(to_proxy);
    if (found == true) return true;
    if (!found) unknown = true;
  }
  return unknown;
}

common::Result<core::WireGuardReading, common::Failure> Channel::read_health(
    const std::string& table) const {
  switch (kind_) {
    case core::ChannelKind::wireguard: return read_wireguard(interface_);
    case core::ChannelKind::interface: return read_device_counters(interface_);
    case core::ChannelKind::tproxy: return read_proxy_counters(table);
  }
  return common::Failure("unknown channel kind");
}

void Channel::cleanup(const DaemonSettings& s) {
  if (s.channel_kind == core::ChannelKind::tproxy) return;  // nothing of the channel's own
  if (s.channel_kind == core::ChannelKind::interface) {
    // The device is the tunnel program's; only the default routes through it were ours.
    for (const char* fam : {"-4", "-6"}) {
      net::run_process({"ip", fam, "route", "del", "default", "dev", s.channel_interface,
                        "table", std::to_string(s.routing_table)});
    }
    return;
  }
  if (s.wg_config.empty()) return;  // not ours
  net::run_process({"ip", "link", "del", s.channel_interface});
  const std::string pf = pid_file(s.channel_interface);
  const std::string pid_text = trim(read_file(pf));
  pid_t pid = 0;
  auto [end, err] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (err == std::errc() && end == pid_text.data() + pid_text.size() && pid > 1) {
    // Only if it still runs wireguard-go (the pid may have been reused).
    if (read_file("/proc/" + pid_text + "/comm").rfind("wireguard-go", 0) == 0) ::kill(pid, SIGTERM);
  }
  ::unlink(pf.c_str());
}

}  // namespace quicstep::client::daemon
