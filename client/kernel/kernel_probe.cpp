#include "client/kernel/kernel_probe.hpp"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/fib_rules.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <vector>

#include "net/netlink_socket.hpp"

namespace quicstep::client::kernel {
namespace {

// Calls `each` on every attribute of `h` after its fixed header of `offset` octets.
template <typename Each>
void for_each_attr(const nlmsghdr* h, std::size_t offset, Each each) {
  const auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(h));
  for (auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(h, offset));
       mnl_attr_ok(a, static_cast<int>(tail - reinterpret_cast<const char*>(a)));
       a = mnl_attr_next(a)) {
    each(a);
  }
}

int af(common::IpFamily f) { return f == common::IpFamily::v4 ? AF_INET : AF_INET6; }

struct RuleCount {
  std::map<std::uint32_t, int> by_priority;
};

int count_rule(const nlmsghdr* h, void* data) {
  if (h->nlmsg_type != RTM_NEWRULE) return MNL_CB_OK;
  std::uint32_t priority = 0;  // a rule without FRA_PRIORITY sits at 0
  for_each_attr(h, sizeof(fib_rule_hdr), [&](const nlattr* attr) {
    if (mnl_attr_get_type(attr) == FRA_PRIORITY &&
        mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) {
      priority = mnl_attr_get_u32(attr);
    }
  });
  ++static_cast<RuleCount*>(data)->by_priority[priority];
  return MNL_CB_OK;
}

struct RouteQuery {
  std::uint32_t table = 0;
  unsigned ifindex = 0;
  bool found = false;
};

int match_route(const nlmsghdr* h, void* data) {
  if (h->nlmsg_type != RTM_NEWROUTE) return MNL_CB_OK;
  auto* q = static_cast<RouteQuery*>(data);
  const auto* rtm = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(h));
  if (rtm->rtm_dst_len != 0) return MNL_CB_OK;
  std::uint32_t table = rtm->rtm_table;
  unsigned oif = 0;
  for_each_attr(h, sizeof(rtmsg), [&](const nlattr* attr) {
    const auto type = mnl_attr_get_type(attr);
    if ((type != RTA_TABLE && type != RTA_OIF) || mnl_attr_validate(attr, MNL_TYPE_U32) < 0) {
      return;
    }
    (type == RTA_TABLE ? table : oif) = mnl_attr_get_u32(attr);
  });
  if (table == q->table && oif == q->ifindex) q->found = true;
  return MNL_CB_OK;
}

struct DefaultRoute {
  bool found = false;
  std::uint32_t metric = 0;
  unsigned oif = 0;
  std::string prefsrc;
};

std::string address_text(int family, const nlattr* attr) {
  char text[INET6_ADDRSTRLEN] = {};
  const std::size_t want = family == AF_INET ? 4 : 16;
  if (mnl_attr_get_payload_len(attr) != want) return {};
  if (::inet_ntop(family, mnl_attr_get_payload(attr), text, sizeof text) == nullptr) return {};
  return text;
}

// The main table's unicast default route of lowest metric (the kernel's choice), and its
// first hop's device when it has several.
int pick_default_route(const nlmsghdr* h, void* data) {
  if (h->nlmsg_type != RTM_NEWROUTE) return MNL_CB_OK;
  auto* best = static_cast<DefaultRoute*>(data);
  const auto* rtm = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(h));
  if (rtm->rtm_dst_len != 0 || rtm->rtm_type != RTN_UNICAST) return MNL_CB_OK;
  DefaultRoute r;
  std::uint32_t table = rtm->rtm_table;
  for_each_attr(h, sizeof(rtmsg), [&](const nlattr* attr) {
    switch (mnl_attr_get_type(attr)) {
      case RTA_TABLE:
        if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) table = mnl_attr_get_u32(attr);
        break;
      case RTA_PRIORITY:
        if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) r.metric = mnl_attr_get_u32(attr);
        break;
      case RTA_OIF:
        if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) r.oif = mnl_attr_get_u32(attr);
        break;
      case RTA_PREFSRC:
        r.prefsrc = address_text(rtm->rtm_family, attr);
        break;
      case RTA_MULTIPATH:
        if (r.oif == 0 && mnl_attr_get_payload_len(attr) >= sizeof(rtnexthop)) {
          r.oif = static_cast<unsigned>(
              static_cast<const rtnexthop*>(mnl_attr_get_payload(attr))->rtnh_ifindex);
        }
        break;
      default:
        break;
    }
  });
  if (table != RT_TABLE_MAIN || (r.oif == 0 && r.prefsrc.empty())) return MNL_CB_OK;
  if (!best->found || r.metric < best->metric) {
    r.found = true;
    *best = r;
  }
  return MNL_CB_OK;
}

struct AddressQuery {
  unsigned ifindex = 0;
  std::string usable, deprecated;  // the first of each
  std::string any;                 // the first one whose duplicate detection did not fail
  std::vector<std::string> all;    // every one whose duplicate detection did not fail
};

int pick_address(const nlmsghdr* h, void* data) {
  if (h->nlmsg_type != RTM_NEWADDR) return MNL_CB_OK;
  auto* q = static_cast<AddressQuery*>(data);
  const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(h));
  if (ifa->ifa_index != q->ifindex || ifa->ifa_scope != RT_SCOPE_UNIVERSE) return MNL_CB_OK;
  std::uint32_t flags = ifa->ifa_flags;
  std::string local, address;
  for_each_attr(h, sizeof(ifaddrmsg), [&](const nlattr* attr) {
    switch (mnl_attr_get_type(attr)) {
      case IFA_FLAGS:  // the full 32 bits; ifa_flags holds the low 8
        if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) flags = mnl_attr_get_u32(attr);
        break;
      case IFA_LOCAL:
        local = address_text(ifa->ifa_family, attr);
        break;
      case IFA_ADDRESS:
        address = address_text(ifa->ifa_family, attr);
        break;
      default:
        break;
    }
  });
  // IPv4: IFA_LOCAL is the address (IFA_ADDRESS the peer's on point-to-point links).
  const std::string& text = !local.empty() ? local : address;
  if (text.empty() || (flags & IFA_F_DADFAILED) != 0) return MNL_CB_OK;
  if (q->any.empty()) q->any = text;
  q->all.push_back(text);
  if ((flags & IFA_F_TENTATIVE) != 0) return MNL_CB_OK;
  std::string& slot = (flags & IFA_F_DEPRECATED) != 0 ? q->deprecated : q->usable;
  if (slot.empty()) slot = text;
  return MNL_CB_OK;
}

struct TableQuery {
  bool found = false;
};

int match_table(const nlmsghdr* h, void* data) {
  if ((h->nlmsg_type & 0xff) == NFT_MSG_NEWTABLE) static_cast<TableQuery*>(data)->found = true;
  return MNL_CB_OK;
}

}  // namespace

KernelProbe::~KernelProbe() {
  if (route_ != nullptr) mnl_socket_close(route_);
  if (nft_ != nullptr) mnl_socket_close(nft_);
}

common::Outcome KernelProbe::open() {
  if (route_ == nullptr) {
    auto opened = net::open_netlink(NETLINK_ROUTE, "rtnetlink (probe)");
    if (!opened) return opened.error();
    route_ = *opened;
  }
  if (nft_ == nullptr) {
    auto opened = net::open_netlink(NETLINK_NETFILTER, "nfnetlink (probe)");
    if (!opened) return opened.error();
    nft_ = *opened;
  }
  return {};
}

int KernelProbe::exchange(mnl_socket* s, nlmsghdr* nlh,
                          int (*on_message)(const nlmsghdr*, void*), void* data) {
  if (s == nullptr) return ENOTCONN;
  const std::uint32_t seq = nlh->nlmsg_seq;
  if (mnl_socket_sendto(s, nlh, nlh->nlmsg_len) < 0) return errno != 0 ? errno : EIO;
  const unsigned port = mnl_socket_get_portid(s);
  std::vector<char> buf(64 * 1024);  // a dump's chunk is at most 32 KiB
  for (;;) {
    pollfd p{mnl_socket_get_fd(s), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return ETIMEDOUT;
    const ssize_t n = mnl_socket_recvfrom(s, buf.data(), buf.size());
    if (n < 0) return errno != 0 ? errno : EIO;
    const int r = mnl_cb_run(buf.data(), static_cast<std::size_t>(n), seq, port,
                             on_message, data);
    if (r == MNL_CB_STOP) return 0;  // NLMSG_DONE, or the acknowledgement
    if (r == MNL_CB_ERROR) return errno != 0 ? errno : EIO;
  }
}

static_assert(offsetof(rtmsg, rtm_family) == 0 && offsetof(ifaddrmsg, ifa_family) == 0 &&
              offsetof(fib_rule_hdr, family) == 0);

int KernelProbe::dump(std::uint16_t type, int family, std::size_t header_size,
                      int (*on_message)(const nlmsghdr*, void*), void* data) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = seq_++;
  // rtmsg, ifaddrmsg and fib_rule_hdr all begin with their family octet.
  auto* header = static_cast<std::uint8_t*>(mnl_nlmsg_put_extra_header(nlh, header_size));
  header[0] = static_cast<std::uint8_t>(family);
  return exchange(route_, nlh, on_message, data);
}

std::optional<bool> KernelProbe::nft_table_exists(std::uint8_t family, const std::string& name) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = seq_++;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = family;
  nfg->version = NFNETLINK_V0;
  nfg->res_id = 0;
  mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, name.c_str());
  TableQuery q;
  const int err = exchange(nft_, nlh, match_table,
                           &q);
  if (err == ENOENT) return false;
  if (err != 0) return std::nullopt;
  return q.found;
}

std::optional<std::map<std::uint32_t, int>> KernelProbe::rule_priorities(
    common::IpFamily family) {
  RuleCount count;
  if (dump(RTM_GETRULE, af(family), sizeof(fib_rule_hdr), count_rule, &count) != 0) {
    return std::nullopt;
  }
  return count.by_priority;
}

std::optional<bool> KernelProbe::has_default_route(common::IpFamily family, std::uint32_t table,
                                                   unsigned ifindex) {
  RouteQuery q{table, ifindex, false};
  if (dump(RTM_GETROUTE, af(family), sizeof(rtmsg), match_route, &q) != 0) return std::nullopt;
  return q.found;
}

std::optional<std::string> KernelProbe::native_source(common::IpFamily family) {
  DefaultRoute route;
  if (dump(RTM_GETROUTE, af(family), sizeof(rtmsg), pick_default_route, &route) != 0) {
    return std::nullopt;
  }
  if (!route.found) return std::string();
  if (!route.prefsrc.empty()) return route.prefsrc;
  AddressQuery q{route.oif, {}, {}, {}, {}};
  if (dump(RTM_GETADDR, af(family), sizeof(ifaddrmsg), pick_address, &q) != 0) {
    return std::nullopt;
  }
  return !q.usable.empty() ? q.usable : q.deprecated;
}

std::optional<std::string> KernelProbe::first_global_address(common::IpFamily family,
                                                             unsigned ifindex) {
  std::optional<std::vector<std::string>> all = global_addresses(family, ifindex);
  if (!all) return std::nullopt;
  return all->empty() ? std::string() : all->front();
}

std::optional<std::vector<std::string>> KernelProbe::global_addresses(common::IpFamily family,
                                                                      unsigned ifindex) {
  AddressQuery q{ifindex, {}, {}, {}, {}};
  if (dump(RTM_GETADDR, af(family), sizeof(ifaddrmsg), pick_address, &q) != 0) {
    return std::nullopt;
  }
  return q.all;
}

namespace {

int read_route_device(const nlmsghdr* nlh, void* data) {
  if (nlh->nlmsg_type != RTM_NEWROUTE) return MNL_CB_OK;
  for_each_attr(nlh, sizeof(rtmsg), [&](const nlattr* attr) {
    if (mnl_attr_get_type(attr) == RTA_OIF && mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) {
      *static_cast<unsigned*>(data) = mnl_attr_get_u32(attr);
    }
  });
  return MNL_CB_OK;
}

}  // namespace

std::optional<unsigned> KernelProbe::route_device(const common::IpAddress& dst,
                                                  std::uint32_t mark) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = RTM_GETROUTE;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;  // the answer, then the acknowledgement
  nlh->nlmsg_seq = seq_++;
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = static_cast<std::uint8_t>(af(dst.family));
  const common::Bytes octets = dst.octets();
  rtm->rtm_dst_len = static_cast<std::uint8_t>(octets.size() * 8);
  mnl_attr_put(nlh, RTA_DST, octets.size(), octets.data());
  if (mark != 0) mnl_attr_put_u32(nlh, RTA_MARK, mark);
  unsigned device = 0;
  if (exchange(route_, nlh, read_route_device, &device) != 0 || device == 0) return std::nullopt;
  return device;
}

}  // namespace quicstep::client::kernel
