// native_guard_tool: drives client/kernel/native_guard from the command line, for
// test_native_guard.py and bench_rule_cost.py (and by hand). It runs in the host's mount
// namespace (the pins live on its /sys/fs/bpf) and enters a network namespace only for what
// touches devices.
//
//   native_guard_tool [--netns NAME] [--pin-dir DIR] attach DEVICE [--clsact] [--generic]
//                     [--quic-port P]... [--native-prefix CIDR]...
//                     prints the attachment (tcx or clsact) and path (ethernet, raw_ip, generic)
//   native_guard_tool [--pin-dir DIR] counters                        JSON, summed over CPUs
//   native_guard_tool [--pin-dir DIR] watch add|get|del LOCAL LPORT REMOTE RPORT
//   native_guard_tool [--netns NAME] [--pin-dir DIR] remove DEVICE...
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "client/kernel/native_guard.hpp"

namespace qc = quicstep::client::kernel;

namespace {

const char* const kSlotNames[NG_COUNTER_SLOTS] = {
    "native_out", "native_in", "drop_long", "drop_dns",      "drop_tcp",
    "drop_gso",   "drop_unparsed", "watch_sent", "watch_answered",
    "native_out_generic", "native_in_generic", "drop_raw_fragment", "channel_udp",
    "channel_udp_gso", "channel_unparsed", "channel_foreign"};

int enter_netns(const std::string& name) {
  if (name.empty()) return 0;
  const std::string path = "/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "native_guard_tool: enter %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  close(fd);
  return 0;
}

std::unique_ptr<qc::NativeGuard> open_pinned(const std::string& pin_dir) {
  qc::GuardOptions options;
  options.pin_dir = pin_dir;
  options.write_config = false;
  auto loaded = qc::NativeGuard::load(options);
  if (!loaded) {
    std::fprintf(stderr, "native_guard_tool: %s\n", loaded.error().message.c_str());
    return nullptr;
  }
  return std::move(*loaded);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Attach, read and remove quicstepd's native-path guard (client/kernel/native_guard)"};
  std::string netns, pin_dir = "/sys/fs/bpf/quicstep";
  app.add_option("--netns", netns, "network namespace (/run/netns/NAME) of the devices");
  app.add_option("--pin-dir", pin_dir, "where the maps and links are pinned");
  app.require_subcommand(1);

  std::string device;
  bool clsact = false;
  std::vector<std::uint16_t> ports;
  std::vector<std::string> prefixes;
  auto* attach = app.add_subcommand("attach", "load and attach to DEVICE (egress and ingress)");
  attach->add_option("device", device)->required();
  attach->add_flag("--clsact", clsact, "a clsact filter even where tcx works");
  bool generic = false;
  attach->add_flag("--generic", generic, "the generic programs even where a fast path fits");
  attach->add_option("--quic-port", ports, "QUIC port (repeatable; default 443)");
  attach->add_option("--native-prefix", prefixes, "native prefix CIDR (repeatable)");

  auto* counters = app.add_subcommand("counters", "print the counters (JSON)");

  std::string op, local, remote;
  std::uint16_t lport = 0, rport = 0;
  auto* watch = app.add_subcommand("watch", "add, read or delete a watched flow");
  watch->add_option("op", op)->required()->check(CLI::IsMember({"add", "get", "del"}));
  watch->add_option("local", local)->required();
  watch->add_option("lport", lport)->required();
  watch->add_option("remote", remote)->required();
  watch->add_option("rport", rport)->required();

  std::vector<std::string> devices;
  auto* remove = app.add_subcommand("remove", "take the guard off DEVICEs, remove the pins");
  remove->add_option("devices", devices);
  CLI11_PARSE(app, argc, argv);

  if (attach->parsed()) {
    qc::GuardOptions options;
    options.pin_dir = pin_dir;
    if (!ports.empty()) options.quic_ports = ports;
    options.native_prefixes = prefixes;
    options.force_clsact = clsact;
    options.force_generic = generic;
    auto loaded = qc::NativeGuard::load(options);
    if (!loaded) {
      std::fprintf(stderr, "native_guard_tool: %s\n", loaded.error().message.c_str());
      return 1;
    }
    auto guard = std::move(*loaded);
    if (enter_netns(netns) != 0) return 1;
    if (auto e = guard->attach(device); !e) {
      std::fprintf(stderr, "native_guard_tool: %s\n", e.error().message.c_str());
      return 1;
    }
    const char* path = guard->path() == qc::GuardPath::ethernet ? "ethernet"
                       : guard->path() == qc::GuardPath::raw_ip ? "raw_ip"
                                                                 : "generic";
    std::printf("%s %s\n", guard->attachment() == qc::GuardAttachment::tcx ? "tcx" : "clsact",
                path);
    return 0;
  }
  if (counters->parsed()) {
    auto guard = open_pinned(pin_dir);
    if (!guard) return 1;
    const auto sums = guard->counters();
    nlohmann::json out;
    for (int slot = 0; slot < NG_COUNTER_SLOTS; ++slot) {
      out[kSlotNames[slot]] = {{"packets", sums[slot].packets}, {"bytes", sums[slot].bytes}};
    }
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  if (watch->parsed()) {
    ng_flow_key key{};
    if (!qc::guard_address(local, key.local) || !qc::guard_address(remote, key.remote)) {
      std::fprintf(stderr, "native_guard_tool: not an address: %s or %s\n", local.c_str(),
                   remote.c_str());
      return 2;
    }
    key.local_port = htons(lport);
    key.remote_port = htons(rport);
    auto guard = open_pinned(pin_dir);
    if (!guard) return 1;
    if (op == "add") {
      if (auto e = guard->watch(key); !e) {
        std::fprintf(stderr, "native_guard_tool: %s\n", e.error().message.c_str());
        return 1;
      }
    } else if (op == "del") {
      guard->unwatch(key);
    } else {
      ng_flow_state state{};
      if (!guard->watched(key, &state)) {
        std::fprintf(stderr, "native_guard_tool: the flow is not watched\n");
        return 1;
      }
      std::printf("%s\n", nlohmann::json{{"sent", state.sent},
                                         {"answered", state.answered},
                                         {"last_answer_ns", state.last_answer_ns}}
                              .dump()
                              .c_str());
    }
    return 0;
  }
  if (enter_netns(netns) != 0) return 1;
  std::printf("%d\n", qc::NativeGuard::remove(pin_dir, devices));
  return 0;
}
