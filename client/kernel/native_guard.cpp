#include "client/kernel/native_guard.hpp"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "native_guard.skel.h"

namespace quicstep::client::kernel {
namespace {

constexpr long kBpfFsMagic = 0xcafe4a11;  // BPF_FS_MAGIC, linux/magic.h
// enum bpf_attach_type in linux/bpf.h since 6.6 (bookworm's headers predate them).
constexpr int kTcxIngress = 46;
constexpr int kTcxEgress = 47;
// The clsact filter's handle ("QS") and priority: how a later start or --cleanup finds it.
constexpr std::uint32_t kClsactHandle = 0x5153;
constexpr std::uint32_t kClsactPriority = 1;

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

bool on_bpffs(const std::string& path) {
  struct statfs fs {};
  return statfs(path.c_str(), &fs) == 0 && fs.f_type == kBpfFsMagic;
}

// Mounts a BPF filesystem at /sys/fs/bpf if the pin directory is not on one, then creates
// the directory.
common::Outcome prepare_pin_dir(const std::string& pin_dir) {
  const std::filesystem::path dir(pin_dir);
  const auto parent = dir.parent_path().string();
  if (!on_bpffs(parent)) {
    if (parent != "/sys/fs/bpf") return common::Failure(parent + " is not a BPF filesystem");
    if (mount("bpf", parent.c_str(), "bpf", 0, "mode=0700") != 0) {
      return common::Failure("mount bpf at " + parent + ": " + errno_text(errno));
    }
  }
  if (mkdir(pin_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return common::Failure("mkdir " + pin_dir + ": " + errno_text(errno));
  }
  return {};
}

std::string link_pin(const std::string& pin_dir, const std::string& device, bool egress) {
  return pin_dir + "/link_" + device + (egress ? "_egress" : "_ingress");
}

bpf_tc_hook clsact_hook(int ifindex, bool egress) {
  bpf_tc_hook hook{};
  hook.sz = sizeof hook;
  hook.ifindex = ifindex;
  hook.attach_point = egress ? BPF_TC_EGRESS : BPF_TC_INGRESS;
  return hook;
}

bpf_tc_opts clsact_opts(int prog_fd) {
  bpf_tc_opts opts{};
  opts.sz = sizeof opts;
  opts.handle = kClsactHandle;
  opts.priority = kClsactPriority;
  opts.prog_fd = prog_fd;
  return opts;
}

// The device's link type (ARPHRD_*), asked in the caller's network namespace; -1 if unknown.
int link_type(const std::string& device) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ifreq req{};
  std::strncpy(req.ifr_name, device.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFHWADDR, &req);
  close(fd);
  return rc == 0 ? req.ifr_hwaddr.sa_family : -1;
}

bool parse_prefix(const std::string& cidr, ng_prefix_key* key) {
  const auto slash = cidr.find('/');
  const std::string addr = cidr.substr(0, slash);
  *key = {};
  if (!guard_address(addr, key->addr)) return false;
  const bool v4 = addr.find(':') == std::string::npos;
  const int max = v4 ? 32 : 128;
  int len = max;
  if (slash != std::string::npos) {
    char* end = nullptr;
    const long v = std::strtol(cidr.c_str() + slash + 1, &end, 10);
    if (end == cidr.c_str() + slash + 1 || *end != '\0' || v < 0 || v > max) return false;
    len = static_cast<int>(v);
  }
  key->prefixlen = static_cast<std::uint32_t>(v4 ? len + 96 : len);
  return true;
}

}  // namespace

bool guard_address(const std::string& text, std::uint8_t out[16]) {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    std::memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    std::memcpy(out + 12, &v4, 4);
    return true;
  }
  return inet_pton(AF_INET6, text.c_str(), out) == 1;
}

namespace {

// Opens the skeleton with its maps pinned under pin_dir (reused where pinned and
// compatible) and loads it. Returns 0 or the error; *out holds the loaded skeleton.
int open_and_load(const std::string& pin_dir, ::native_guard** out) {
  ::native_guard* skel = native_guard__open();
  if (skel == nullptr) return errno != 0 ? -errno : -ENOMEM;
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, skel->obj) {
    const std::string pin = pin_dir + "/" + bpf_map__name(map);
    bpf_map__set_pin_path(map, pin.c_str());  // reused if pinned and compatible, else pinned
  }
  if (int err = native_guard__load(skel); err != 0) {
    native_guard__destroy(skel);
    return err;
  }
  *out = skel;
  return 0;
}

// The pinned maps under pin_dir (not the links): what an earlier version left there.
int remove_map_pins(const std::string& pin_dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(pin_dir, ec)) {
    if (entry.path().filename().string().rfind("link_", 0) == 0) continue;
    if (unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace

NativeGuard::Loaded NativeGuard::load(const GuardOptions& options) {
  if (auto prepared = prepare_pin_dir(options.pin_dir); !prepared) return prepared.error();
  ::native_guard* skel = nullptr;
  int err = open_and_load(options.pin_dir, &skel);
  // Maps pinned by an earlier version (one that died, its pins left without --cleanup) do
  // not fit this one's (a counter slot more): the kernel refuses to reuse them (EINVAL).
  // Their pins go, and the load is tried once more with maps of its own. The programs an
  // earlier guard left attached keep their maps until attach() replaces their links.
  bool replaced = false;
  if (err == -EINVAL && options.write_config && remove_map_pins(options.pin_dir) > 0) {
    replaced = true;
    err = open_and_load(options.pin_dir, &skel);
  }
  if (err != 0) {
    std::string why = "load the guard's BPF programs: " + errno_text(err);
    // Measured (kernel 6.18): CAP_BPF without CAP_PERFMON fails with EFAULT, without
    // CAP_BPF with EPERM (lab test_15).
    if (err == -EPERM || err == -EFAULT || err == EPERM || err == EFAULT) {
      why += " (needs CAP_BPF and CAP_PERFMON)";
    }
    return common::Failure(why);
  }
  std::unique_ptr<NativeGuard> guard(new NativeGuard(skel, options));
  guard->replaced_stale_maps_ = replaced;
  if (!options.write_config) return guard;
  // The configuration maps are written afresh: a reused map may hold an earlier config's.
  const int ports_fd = bpf_map__fd(skel->maps.ng_quic_ports);
  for (std::uint32_t word = 0; word < NG_PORT_WORDS; ++word) {
    std::uint64_t bits = 0;
    for (auto port : options.quic_ports) {
      if (port / 64 == word) bits |= 1ULL << (port % 64);
    }
    if (bpf_map_update_elem(ports_fd, &word, &bits, BPF_ANY) != 0) {
      return common::Failure("write the QUIC ports: " + errno_text(errno));
    }
  }
  const int prefixes_fd = bpf_map__fd(skel->maps.ng_prefixes);
  ng_prefix_key key{}, next{};
  while (bpf_map_get_next_key(prefixes_fd, nullptr, &next) == 0) {
    bpf_map_delete_elem(prefixes_fd, &next);
  }
  for (const auto& cidr : options.native_prefixes) {
    if (!parse_prefix(cidr, &key)) {
      return common::Failure("native prefix '" + cidr + "': not an address/length");
    }
    const std::uint8_t one = 1;
    if (bpf_map_update_elem(prefixes_fd, &key, &one, BPF_ANY) != 0) {
      return common::Failure("write native prefix " + cidr + ": " + errno_text(errno));
    }
  }
  return guard;
}

NativeGuard::~NativeGuard() { native_guard__destroy(skel_); }

common::Outcome NativeGuard::attach_one(const std::string& device, int ifindex, int prog,
                                        bool egress, const std::string& pin) {
  if (!options_.force_clsact) {
    const int link = bpf_link_create(
        prog, ifindex, static_cast<bpf_attach_type>(egress ? kTcxEgress : kTcxIngress), nullptr);
    if (link >= 0) {
      // The new link is pinned beside the old one and renamed over it, so the device is
      // never without its program; the old link goes with its last reference.
      const std::string fresh = pin + "_new";  // bpffs refuses dots in names
      unlink(fresh.c_str());
      const bool pinned = bpf_obj_pin(link, fresh.c_str()) == 0;
      const int pin_errno = errno;
      close(link);
      if (!pinned) return common::Failure("pin " + fresh + ": " + errno_text(pin_errno));
      if (rename(fresh.c_str(), pin.c_str()) != 0) {
        return common::Failure("rename " + fresh + ": " + errno_text(errno));
      }
      attachment_ = GuardAttachment::tcx;
      return {};
    }
    // EEXIST: this very program is on the hook already (tcx refuses it twice). The healer
    // meets that when another tool detached one direction only, or when a restore ran
    // between two detaches: the direction still there is left as it is.
    if (link == -EEXIST) {
      attachment_ = GuardAttachment::tcx;
      return {};
    }
    if (link != -EINVAL && link != -EOPNOTSUPP) {
      return common::Failure("tcx link on " + device + ": " + errno_text(link));
    }
  }
  auto hook = clsact_hook(ifindex, egress);
  if (int err = bpf_tc_hook_create(&hook); err != 0 && err != -EEXIST) {
    return common::Failure("clsact on " + device + ": " + errno_text(err));
  }
  auto opts = clsact_opts(prog);
  opts.flags = BPF_TC_F_REPLACE;
  if (int err = bpf_tc_attach(&hook, &opts); err != 0) {
    return common::Failure("tc filter on " + device + ": " + errno_text(err));
  }
  attachment_ = GuardAttachment::clsact;
  return {};
}

common::Outcome NativeGuard::attach(const std::string& device) {
  const int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return common::Failure("no device " + device);
  // The fast path where the link header's length is known: Ethernet (and what looks like
  // it: Wi-Fi, VLAN, veth), raw IP (tun, WireGuard, PPP, mobile broadband); else generic.
  const int type = options_.force_generic ? -1 : link_type(device);
  const bool ether = type == ARPHRD_ETHER;
  const bool raw_ip = type == ARPHRD_NONE || type == ARPHRD_PPP || type == ARPHRD_RAWIP;
  path_ = ether ? GuardPath::ethernet : raw_ip ? GuardPath::raw_ip : GuardPath::generic;
  for (bool egress : {true, false}) {
    bpf_program* program = egress ? (ether    ? skel_->progs.ng_egress_eth
                                     : raw_ip ? skel_->progs.ng_egress_l3
                                              : skel_->progs.ng_egress)
                                  : (ether    ? skel_->progs.ng_ingress_eth
                                     : raw_ip ? skel_->progs.ng_ingress_l3
                                              : skel_->progs.ng_ingress);
    if (auto done = attach_one(device, ifindex, bpf_program__fd(program), egress,
                               link_pin(options_.pin_dir, device, egress));
        !done) {
      return done;
    }
  }
  return {};
}

common::Outcome NativeGuard::set_channel_source(const ng_channel_source& source) {
  const std::uint32_t zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.ng_channel), &zero, &source, BPF_ANY) != 0) {
    return common::Failure("write the channel's tunnel addresses: " + errno_text(errno));
  }
  return {};
}

common::Outcome NativeGuard::attach_channel(const std::string& device,
                                            const ng_channel_source& source) {
  const int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return common::Failure("no device " + device);
  if (auto written = set_channel_source(source); !written) return written;
  return attach_one(device, ifindex, bpf_program__fd(skel_->progs.ng_channel_egress), true,
                    options_.pin_dir + "/link_" + device + "_channel");
}

bool NativeGuard::program_attached(int ifindex, bool egress,
                                   const std::vector<std::uint32_t>& ours) const {
  auto is_ours = [&](std::uint32_t id) {
    return std::find(ours.begin(), ours.end(), id) != ours.end();
  };
  bool found = false;
  if (attachment_ == GuardAttachment::tcx) {
    std::array<std::uint32_t, 64> ids{};
    std::uint32_t count = ids.size();
    if (bpf_prog_query(ifindex, static_cast<bpf_attach_type>(egress ? kTcxEgress : kTcxIngress),
                       0, nullptr, ids.data(), &count) == 0) {
      for (std::uint32_t i = 0; i < count && i < ids.size(); ++i) found |= is_ours(ids[i]);
    }
  } else {
    auto hook = clsact_hook(ifindex, egress);
    auto opts = clsact_opts(0);
    const auto previous_print = libbpf_set_print(nullptr);  // absent: expected, quietly
    found = bpf_tc_query(&hook, &opts) == 0 && is_ours(opts.prog_id);
    libbpf_set_print(previous_print);
  }
  return found;
}

bool NativeGuard::channel_attached(const std::string& device) const {
  const int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return true;
  bpf_prog_info info{};
  std::uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(bpf_program__fd(skel_->progs.ng_channel_egress), &info, &len) != 0) {
    return false;
  }
  return program_attached(ifindex, true, {info.id});
}

bool NativeGuard::attached(const std::string& device) const {
  const int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return true;
  std::vector<std::uint32_t> ours;
  for (const bpf_program* p :
       {skel_->progs.ng_egress_eth, skel_->progs.ng_egress_l3, skel_->progs.ng_egress,
        skel_->progs.ng_ingress_eth, skel_->progs.ng_ingress_l3, skel_->progs.ng_ingress}) {
    bpf_prog_info info{};
    std::uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0) ours.push_back(info.id);
  }
  for (bool egress : {true, false}) {
    if (!program_attached(ifindex, egress, ours)) return false;
  }
  return true;
}

GuardCounters NativeGuard::counters() const {
  GuardCounters sum{};
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return sum;
  std::vector<ng_counter> per_cpu(static_cast<std::size_t>(ncpu));
  for (std::uint32_t slot = 0; slot < NG_COUNTER_SLOTS; ++slot) {
    if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.ng_counters), &slot, per_cpu.data()) != 0) {
      continue;
    }
    for (const auto& c : per_cpu) {
      sum[slot].packets += c.packets;
      sum[slot].bytes += c.bytes;
    }
  }
  return sum;
}

common::Outcome NativeGuard::set_port_bit(int map_fd, std::uint16_t port, bool on) {
  const std::uint32_t word = port / 64;
  std::uint64_t bits = 0;
  if (bpf_map_lookup_elem(map_fd, &word, &bits) != 0) {
    return common::Failure("read port bitmap: " + errno_text(errno));
  }
  bits = on ? bits | (1ULL << (port % 64)) : bits & ~(1ULL << (port % 64));
  if (bpf_map_update_elem(map_fd, &word, &bits, BPF_ANY) != 0) {
    return common::Failure("write port bitmap: " + errno_text(errno));
  }
  return {};
}

common::Outcome NativeGuard::watch(const ng_flow_key& key) {
  const ng_flow_state zero{};
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.ng_watch), &key, &zero, BPF_ANY) != 0) {
    return common::Failure("watch a flow: " + errno_text(errno));
  }
  return set_port_bit(bpf_map__fd(skel_->maps.ng_watch_ports), ntohs(key.local_port), true);
}

bool NativeGuard::watched(const ng_flow_key& key, ng_flow_state* state) const {
  return bpf_map_lookup_elem(bpf_map__fd(skel_->maps.ng_watch), &key, state) == 0;
}

void NativeGuard::unwatch(const ng_flow_key& key) {
  const int fd = bpf_map__fd(skel_->maps.ng_watch);
  bpf_map_delete_elem(fd, &key);
  ng_flow_key cursor{}, next{};
  const ng_flow_key* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    if (next.local_port == key.local_port) return;  // another watched flow uses the port
    cursor = next;
    prev = &cursor;
  }
  // A bit left set only costs the guard a lookup in the watch map for that port.
  (void)set_port_bit(bpf_map__fd(skel_->maps.ng_watch_ports), ntohs(key.local_port), false);
}

int NativeGuard::remove(const std::string& pin_dir, const std::vector<std::string>& devices) {
  int removed = 0;
  // Detaching where there is no clsact (a tcx attachment, or none) fails, expectedly: libbpf
  // would print the kernel's message for each.
  const auto previous_print = libbpf_set_print(nullptr);
  for (const auto& device : devices) {
    const int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
    if (ifindex == 0) continue;
    for (bool egress : {true, false}) {
      auto hook = clsact_hook(ifindex, egress);
      auto opts = clsact_opts(0);
      if (bpf_tc_detach(&hook, &opts) == 0) ++removed;
    }
  }
  libbpf_set_print(previous_print);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(pin_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (unlink(entry.path().c_str()) == 0 && name.rfind("link_", 0) == 0) ++removed;
  }
  rmdir(pin_dir.c_str());
  return removed;
}

}  // namespace quicstep::client::kernel
