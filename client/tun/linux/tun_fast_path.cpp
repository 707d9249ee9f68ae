#include "client/tun/linux/tun_fast_path.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "tun_fast_path.skel.h"

extern "C" {
#include "client/tun/linux/bpf/tun_fast_path_shared.h"
}

namespace quicstep::client::tun {
namespace {

// BPF_TCX_EGRESS: bookworm's libbpf 1.1 and uapi headers predate tcx (native_guard.cpp).
constexpr int kTcxEgress = 47;

std::string errno_text(int err) {
  return std::strerror(err < 0 ? -err : err);
}

// An address as the program keys it: IPv6, IPv4 mapped (::ffff:a.b.c.d).
void mapped(const common::IpAddress& a, __u8 out[16]) {
  std::memset(out, 0, 16);
  if (a.family == common::IpFamily::v4) {
    out[10] = out[11] = 0xff;
    std::memcpy(out + 12, a.bytes.data(), 4);
  } else {
    std::memcpy(out, a.bytes.data(), 16);
  }
}

tfp_key key_of(const common::FlowKey& flow) {
  tfp_key k{};
  mapped(flow.client, k.app);
  mapped(flow.server, k.server);
  k.app_port = htons(flow.client_port);
  k.server_port = htons(flow.server_port);
  return k;
}

}  // namespace

common::Result<std::unique_ptr<TunFastPath>, common::Failure> TunFastPath::attach(
    const std::string& device, std::uint32_t mark) {
  std::unique_ptr<TunFastPath> fast(new TunFastPath(mark));
  fast->skel_ = tun_fast_path__open_and_load();
  if (fast->skel_ == nullptr) {
    return common::Failure("load the fast path's BPF program: " + errno_text(errno));
  }
  if (auto opened = fast->probe_.open(); !opened) return opened.error();
  if (auto linked = fast->link(device); !linked) return linked.error();
  return fast;
}

TunFastPath::~TunFastPath() {
  if (link_ >= 0) ::close(link_);
  tun_fast_path__destroy(skel_);
}

common::Outcome TunFastPath::link(const std::string& device) {
  const int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return common::Failure("no device " + device);
  const int fresh = bpf_link_create(bpf_program__fd(skel_->progs.tfp_egress), ifindex,
                                    static_cast<bpf_attach_type>(kTcxEgress), nullptr);
  if (fresh < 0) return common::Failure("tcx link on " + device + ": " + errno_text(fresh));
  if (link_ >= 0) ::close(link_);
  link_ = fresh;
  return {};
}

common::Outcome TunFastPath::reattach(const std::string& device) { return link(device); }

bool TunFastPath::install(const common::FlowKey& flow, int relay_fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  tfp_value v{};
  if (getsockname(relay_fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    ++removed_.install_failed;
    return false;
  }
  if (local.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&local);
    v.native[10] = v.native[11] = 0xff;
    std::memcpy(v.native + 12, &in->sin_addr, 4);
    v.native_port = in->sin_port;
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&local);
    std::memcpy(v.native, &in6->sin6_addr, 16);
    v.native_port = in6->sin6_port;
  }
  const std::optional<unsigned> device = probe_.route_device(flow.server, mark_);
  if (!device) {
    ++removed_.install_failed;
    return false;
  }
  v.ifindex = *device;
  v.mark = mark_;
  const tfp_key k = key_of(flow);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tfp_flows), &k, &v, BPF_ANY) != 0) {
    ++removed_.install_failed;  // the map full (4,096 flows): the engine relays this one
    return false;
  }
  ++removed_.installed;
  return true;
}

void TunFastPath::remove(const common::FlowKey& flow) {
  const tfp_key k = key_of(flow);
  const int map = bpf_map__fd(skel_->maps.tfp_flows);
  tfp_value v{};
  if (bpf_map_lookup_elem(map, &k, &v) != 0) return;
  bpf_map_delete_elem(map, &k);
  // A datagram counted between the lookup and the delete is lost to the count, not sent.
  removed_.packets += v.packets;
  removed_.bytes += v.bytes;
}

FastPathCounters TunFastPath::counters() {
  FastPathCounters c = removed_;
  c.flows = 0;
  const int map = bpf_map__fd(skel_->maps.tfp_flows);
  tfp_key k{}, next{};
  tfp_key* at = nullptr;
  while (bpf_map_get_next_key(map, at, &next) == 0) {
    tfp_value v{};
    if (bpf_map_lookup_elem(map, &next, &v) == 0) {
      ++c.flows;
      c.packets += v.packets;
      c.bytes += v.bytes;
    }
    k = next;
    at = &k;
  }
  return c;
}

}  // namespace quicstep::client::tun
