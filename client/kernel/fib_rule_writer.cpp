#include "client/kernel/fib_rule_writer.hpp"

#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <net/if.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "net/netlink_socket.hpp"

namespace quicstep::client::kernel {

FibRule flow_rule(const common::FlowKey& flow, std::uint32_t priority, std::uint32_t table) {
  FibRule r;
  r.family = flow.server.family;
  r.priority = priority;
  r.table = table;
  r.ip_proto = flow.protocol;
  r.sport = flow.client_port;
  r.dport = flow.server_port;
  r.has_dst = true;
  r.dst = flow.server;
  r.dst_len = flow.server.family == common::IpFamily::v4 ? 32 : 128;
  return r;
}

namespace {

bool parse_u32(const std::string& text, std::uint32_t* out, int base = 10) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (base == 16 && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    first += 2;
  }
  auto [end, err] = std::from_chars(first, last, *out, base);
  return err == std::errc() && end == last;
}

}  // namespace

std::optional<FibRule> parse_rule_command(const std::vector<std::string>& args) {
  if (args.size() < 6 || args[0] != "ip" || args[2] != "rule" || args[3] != "add") {
    return std::nullopt;
  }
  FibRule r;
  if (args[1] == "-4") {
    r.family = common::IpFamily::v4;
  } else if (args[1] == "-6") {
    r.family = common::IpFamily::v6;
  } else {
    return std::nullopt;
  }
  bool action = false;
  for (std::size_t i = 4; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "unreachable") {
      r.unreachable = true;
      action = true;
      continue;
    }
    if (i + 1 >= args.size()) return std::nullopt;
    const std::string& value = args[++i];
    std::uint32_t n = 0;
    if (word == "priority") {
      if (!parse_u32(value, &r.priority)) return std::nullopt;
    } else if (word == "lookup") {
      action = true;
      if (value == "main") {
        r.table = 254;
      } else if (!parse_u32(value, &r.table)) {
        return std::nullopt;
      }
    } else if (word == "ipproto") {
      if (value != "udp" && value != "tcp") return std::nullopt;
      r.ip_proto = value == "udp" ? 17 : 6;
    } else if (word == "dport") {
      if (!parse_u32(value, &n) || n == 0 || n > 65535) return std::nullopt;
      r.dport = static_cast<std::uint16_t>(n);
    } else if (word == "fwmark") {
      const auto slash = value.find('/');
      if (slash == std::string::npos || !parse_u32(value.substr(0, slash), &r.fwmark, 16) ||
          !parse_u32(value.substr(slash + 1), &r.fwmask, 16) || r.fwmask == 0) {
        return std::nullopt;
      }
    } else if (word == "iif" || word == "oif") {
      if (value.empty() || value.size() >= IFNAMSIZ || value.find('/') != std::string::npos) {
        return std::nullopt;
      }
      (word == "iif" ? r.iif : r.oif) = value;
    } else if (word == "to") {
      const auto slash = value.find('/');
      const std::string addr = value.substr(0, slash);
      const bool v4 = r.family == common::IpFamily::v4;
      std::uint8_t bytes[16];
      if (inet_pton(v4 ? AF_INET : AF_INET6, addr.c_str(), bytes) != 1) return std::nullopt;
      std::array<std::uint8_t, 4> a4{};
      std::array<std::uint8_t, 16> a6{};
      std::memcpy(v4 ? a4.data() : a6.data(), bytes, v4 ? 4 : 16);
      r.dst = v4 ? common::IpAddress::v4(a4) : common::IpAddress::v6(a6);
      const std::uint32_t max = v4 ? 32 : 128;
      n = max;
      if (slash != std::string::npos && (!parse_u32(value.substr(slash + 1), &n) || n > max)) {
        return std::nullopt;
      }
      r.has_dst = true;
      r.dst_len = static_cast<std::uint8_t>(n);
    } else {
      return std::nullopt;
    }
  }
  if (!action || r.priority == 0) return std::nullopt;
  return r;
}

FibRuleWriter::~FibRuleWriter() {
  if (socket_ != nullptr) mnl_socket_close(socket_);
}

common::Outcome FibRuleWriter::open() {
  if (socket_ != nullptr) return {};
  auto opened = net::open_netlink(NETLINK_ROUTE, "rtnetlink");
  if (!opened) return opened.error();
  socket_ = *opened;
  port_id_ = mnl_socket_get_portid(socket_);
  return {};
}

int FibRuleWriter::request(std::uint16_t type, std::uint16_t flags, const FibRule& rule) {
  if (socket_ == nullptr) return ENOTCONN;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  const std::uint32_t seq = seq_++;
  nlh->nlmsg_seq = seq;
  auto* hdr = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(fib_rule_hdr)));
  const bool v4 = rule.family == common::IpFamily::v4;
  hdr->family = v4 ? AF_INET : AF_INET6;
  // table 0 (only to delete): any action, any table.
  hdr->action = rule.unreachable ? FR_ACT_UNREACHABLE
                                 : (rule.table != 0 ? FR_ACT_TO_TBL : FR_ACT_UNSPEC);
  // Tables past 255 are named by FRA_TABLE alone.
  hdr->table = static_cast<std::uint8_t>(!rule.unreachable && rule.table < 256 ? rule.table : 0);
  mnl_attr_put_u32(nlh, FRA_PRIORITY, rule.priority);
  if (!rule.unreachable && rule.table != 0) mnl_attr_put_u32(nlh, FRA_TABLE, rule.table);
  if (rule.has_dst) {
    hdr->dst_len = rule.dst_len;
    mnl_attr_put(nlh, FRA_DST, v4 ? 4 : 16, rule.dst.bytes.data());
  }
  if (rule.fwmask != 0) {
    mnl_attr_put_u32(nlh, FRA_FWMARK, rule.fwmark);
    mnl_attr_put_u32(nlh, FRA_FWMASK, rule.fwmask);
  }
  if (!rule.iif.empty()) mnl_attr_put_strz(nlh, FRA_IIFNAME, rule.iif.c_str());
  if (!rule.oif.empty()) mnl_attr_put_strz(nlh, FRA_OIFNAME, rule.oif.c_str());
  if (rule.ip_proto != 0) mnl_attr_put_u8(nlh, FRA_IP_PROTO, rule.ip_proto);
  if (rule.sport != 0) {
    const fib_rule_port_range r{rule.sport, rule.sport};
    mnl_attr_put(nlh, FRA_SPORT_RANGE, sizeof r, &r);
  }
  if (rule.dport != 0) {
    const fib_rule_port_range r{rule.dport, rule.dport};
    mnl_attr_put(nlh, FRA_DPORT_RANGE, sizeof r, &r);
  }
  if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0) return errno != 0 ? errno : EIO;
  // The kernel answers inside sendmsg: the acknowledgement is queued already.
  for (int tries = 0; tries < 16; ++tries) {
    pollfd p{mnl_socket_get_fd(socket_), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return ETIMEDOUT;
    const ssize_t n = mnl_socket_recvfrom(socket_, buf.data(), buf.size());
    if (n < 0) return errno != 0 ? errno : EIO;
    int left = static_cast<int>(n);
    for (const nlmsghdr* h = reinterpret_cast<const nlmsghdr*>(buf.data()); mnl_nlmsg_ok(h, left);
         h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR) continue;
      return -static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h))->error;
    }
  }
  return EIO;
}

int FibRuleWriter::add(const FibRule& rule) {
  return request(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, rule);
}

int FibRuleWriter::remove(const FibRule& rule) { return request(RTM_DELRULE, 0, rule); }

int FibRuleWriter::remove_all_at(common::IpFamily family, std::uint32_t priority) {
  // A delete that names only the family and the priority removes the first rule there; the
  // loop ends when none is left (or on any other error).
  FibRule any;
  any.family = family;
  any.priority = priority;
  any.table = 0;
  int removed = 0;
  while (request(RTM_DELRULE, 0, any) == 0) ++removed;
  return removed;
}

}  // namespace quicstep::client::kernel
