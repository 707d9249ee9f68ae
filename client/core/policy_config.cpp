#include "client/core/policy_config.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <toml++/toml.h>

namespace quicstep::client::core {
namespace {

using Known = std::initializer_list<std::string_view>;

// Renders a TOML value as it would appear in the file, for quoting in errors.
std::string render(const toml::node& node) {
  std::ostringstream os;
  node.visit([&os](const auto& n) { os << n; });
  std::string s = os.str();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Walks the parsed document, filling a Config and collecting every error.
class Loader {
 public:
  Loader(std::string_view file, std::vector<ConfigError>* errors)
      : file_(file), errors_(errors) {}

  void error(const toml::source_region& where, std::string message) {
    errors_->push_back({file_, static_cast<std::uint32_t>(where.begin.line),
                        static_cast<std::uint32_t>(where.begin.column), std::move(message)});
  }

  // The sub-table `name` of `root` (nullptr when absent or not a table: reported).
  const toml::table* table(const toml::table& root, std::string_view name) {
    const toml::node* node = root.get(name);
    if (node == nullptr) return nullptr;
    if (const auto* t = node->as_table()) return t;
    error(node->source(), "[" + std::string(name) + "] must be a table, not " + render(*node));
    return nullptr;
  }

  // Reports every key of `t` not in `known`.
  void known_keys(const toml::table& t, std::string_view where, Known known) {
    for (const auto& [key, node] : t) {
      if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
      std::string message = "unknown key '" + std::string(key.str()) + "'";
      if (!where.empty()) message += " in [" + std::string(where) + "]";
      error(key.source(), message + " (expected one of:" + list(known) + ")");
    }
  }

  template <typename T>
  void integer(const toml::table* t, std::string_view name, std::int64_t lo, std::int64_t hi,
               T* out) {
    const toml::node* node = t ? t->get(name) : nullptr;
    if (node == nullptr) return;
    const auto* v = node->as_integer();
    if (v == nullptr || v->get() < lo || v->get() > hi) {
      error(node->source(), std::string(name) + " must be an integer in " + std::to_string(lo) +
                                ".." + std::to_string(hi) + ", not " + render(*node));
      return;
    }
    *out = static_cast<T>(v->get());
  }

  // An integer count of `unit`s into a Duration.
  template <typename Unit>
  void duration(const toml::table* t, std::string_view name, std::int64_t lo, std::int64_t hi,
                Duration* out) {
    std::int64_t n = -1;
    integer(t, name, lo, hi, &n);
    if (n >= 0) *out = std::chrono::duration_cast<Duration>(Unit(n));
  }

  void boolean(const toml::table* t, std::string_view name, bool* out) {
    const toml::node* node = t ? t->get(name) : nullptr;
    if (node == nullptr) return;
    if (const auto* v = node->as_boolean()) {
      *out = v->get();
      return;
    }
    error(node->source(), std::string(name) + " must be true or false, not " + render(*node));
  }

  // A string; returns its node (for further checks), or nullptr when absent or wrong.
  const toml::node* string(const toml::table* t, std::string_view name, std::string* out) {
    const toml::node* node = t ? t->get(name) : nullptr;
    if (node == nullptr) return nullptr;
    if (const auto* v = node->as_string()) {
      *out = v->get();
      return node;
    }
    error(node->source(), std::string(name) + " must be a string, not " + render(*node));
    return nullptr;
  }

  // One of `words`; returns its index in *out.
  void word(const toml::table* t, std::string_view name, Known words, std::size_t* out) {
    std::string s;
    const toml::node* node = string(t, name, &s);
    if (node == nullptr) return;
    const auto it = std::find(words.begin(), words.end(), s);
    if (it != words.end()) {
      *out = static_cast<std::size_t>(it - words.begin());
      return;
    }
    error(node->source(), std::string(name) + " must be one of" + list(words) + ", not " +
                              render(*node));
  }

  static std::string list(Known words) {
    std::string s;
    for (const auto w : words) s += " '" + std::string(w) + "'";
    return s;
  }

  void quic_ports(const toml::table* t, std::vector<std::uint16_t>* out);
  void prefixes(const toml::table* t, std::string_view name, std::vector<std::string>* v4,
                std::vector<std::string>* v6);
  void addresses(const toml::table* t, std::string_view name, std::vector<std::string>* v4,
                 std::vector<std::string>* v6);

 private:
  std::string file_;
  std::vector<ConfigError>* errors_;
};

void Loader::quic_ports(const toml::table* t, std::vector<std::uint16_t>* out) {
  const toml::node* node = t ? t->get("quic_ports") : nullptr;
  if (node == nullptr) return;
  const auto* array = node->as_array();
  if (array == nullptr || array->empty() || array->size() > kMaxQuicPorts) {
    error(node->source(), "quic_ports must be an array of 1.." + std::to_string(kMaxQuicPorts) +
                              " ports, not " + render(*node));
    return;
  }
  std::vector<std::uint16_t> ports;
  for (const toml::node& element : *array) {
    const auto* v = element.as_integer();
    if (v == nullptr || v->get() < 1 || v->get() > 65535) {
      error(element.source(), "quic_ports: a port must be an integer in 1..65535, not " +
                                  render(element));
      return;
    }
    const auto port = static_cast<std::uint16_t>(v->get());
    if (std::find(ports.begin(), ports.end(), port) != ports.end() || port == 53) {
      error(element.source(), "quic_ports: port " + render(element) +
                                  (port == 53 ? " is DNS" : " is listed twice"));
      return;
    }
    ports.push_back(port);
  }
  *out = std::move(ports);
}

// "address/length" (IPv4 or IPv6, length within the family's bits), normalised by
// inet_ntop; the family in *v6. False when it is not one.
bool parse_prefix(const std::string& text, std::string* out, bool* v6) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash + 1 >= text.size() || text.size() > 64) return false;
  const std::string addr = text.substr(0, slash);
  unsigned length = 0;
  const char* first = text.data() + slash + 1;
  const char* last = text.data() + text.size();
  if (auto [end, ec] = std::from_chars(first, last, length); ec != std::errc() || end != last) {
    return false;
  }
  unsigned char bytes[16];
  char buf[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, addr.c_str(), bytes) == 1 && length <= 32) {
    *v6 = false;
    inet_ntop(AF_INET, bytes, buf, sizeof buf);
  } else if (inet_pton(AF_INET6, addr.c_str(), bytes) == 1 && length <= 128) {
    *v6 = true;
    inet_ntop(AF_INET6, bytes, buf, sizeof buf);
  } else {
    return false;
  }
  *out = std::string(buf) + "/" + std::to_string(length);
  return true;
}

void Loader::prefixes(const toml::table* t, std::string_view name, std::vector<std::string>* v4,
                      std::vector<std::string>* v6) {
  const toml::node* node = t ? t->get(name) : nullptr;
  if (node == nullptr) return;
  const auto* array = node->as_array();
  if (array == nullptr || array->size() > 256) {
    error(node->source(), std::string(name) + " must be an array of at most 256 prefixes, not " +
                              render(*node));
    return;
  }
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    std::string prefix;
    bool is_v6 = false;
    if (s == nullptr || !parse_prefix(s->get(), &prefix, &is_v6)) {
      error(element.source(), std::string(name) +
                                  ": each must be \"address/length\" (IPv4 or IPv6), not " +
                                  render(element));
      return;
    }
    (is_v6 ? v6 : v4)->push_back(prefix);
  }
}

void Loader::addresses(const toml::table* t, std::string_view name,
                       std::vector<std::string>* v4, std::vector<std::string>* v6) {
  const toml::node* node = t ? t->get(name) : nullptr;
  if (node == nullptr) return;
  const auto* array = node->as_array();
  if (array == nullptr || array->size() > 256) {
    error(node->source(), std::string(name) + " must be an array of at most 256 addresses, "
                                              "not " + render(*node));
    return;
  }
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    unsigned char bytes[16];
    char buf[INET6_ADDRSTRLEN];
    if (s != nullptr && inet_pton(AF_INET, s->get().c_str(), bytes) == 1) {
      v4->push_back(inet_ntop(AF_INET, bytes, buf, sizeof buf));
    } else if (s != nullptr && inet_pton(AF_INET6, s->get().c_str(), bytes) == 1) {
      v6->push_back(inet_ntop(AF_INET6, bytes, buf, sizeof buf));
    } else {
      error(element.source(), std::string(name) + ": each must be an IPv4 or IPv6 address "
                                                  "(no name, no prefix length), not " +
                                  render(element));
      return;
    }
  }
}

void load_policy(Loader& l, const toml::table& root, Policy* p) {
  if (const auto* t = l.table(root, "classifier")) {
    l.known_keys(*t, "classifier", {"quic_ports", "dns_to_channel", "tcp_to_channel",
                                    "other_udp", "other_protocols", "event_capacity"});
    l.quic_ports(t, &p->quic_ports);
    l.boolean(t, "dns_to_channel", &p->dns_to_channel);
    l.boolean(t, "tcp_to_channel", &p->tcp_to_channel);
    std::size_t udp = static_cast<std::size_t>(p->other_udp);
    std::size_t other = static_cast<std::size_t>(p->other_protocols);
    l.word(t, "other_udp", {"channel", "native"}, &udp);
    l.word(t, "other_protocols", {"channel", "native"}, &other);
    p->other_udp = static_cast<Route>(udp);
    p->other_protocols = static_cast<Route>(other);
    l.integer(t, "event_capacity", 16, 1 << 20, &p->event_capacity);
  }
  if (const auto* t = l.table(root, "hold")) {
    l.known_keys(*t, "hold", {"packets", "time_ms"});
    l.integer(t, "packets", 0, 1'000'000, &p->hold.packets);
    l.duration<std::chrono::milliseconds>(t, "time_ms", 0, 60'000, &p->hold.time);
  }
  if (const auto* t = l.table(root, "native_switch")) {
    NativeSwitchPolicy& n = p->native_switch;
    l.known_keys(*t, "native_switch", {"enabled", "rtt_percent", "min_delay_ms", "max_delay_ms",
                                       "unknown_rtt_delay_ms", "lift_bytes",
                                       "lift_delay_ms", "hold"});
    l.boolean(t, "enabled", &n.enabled);
    l.boolean(t, "hold", &n.hold);
    l.integer(t, "rtt_percent", 0, 400, &n.rtt_percent);
    l.duration<std::chrono::milliseconds>(t, "min_delay_ms", 0, 1'000, &n.min_delay);
    l.duration<std::chrono::milliseconds>(t, "max_delay_ms", 0, 1'000, &n.max_delay);
    l.duration<std::chrono::milliseconds>(t, "unknown_rtt_delay_ms", 0, 1'000,
                                          &n.unknown_rtt_delay);
    l.integer(t, "lift_bytes", 0, 60'000, &n.lift_bytes);
    l.duration<std::chrono::milliseconds>(t, "lift_delay_ms", 0, 1'000, &n.lift_delay);
  }
  if (const auto* t = l.table(root, "watchdog")) {
    l.known_keys(*t, "watchdog", {"enabled", "rtt_multiplier", "min_timeout_ms",
                                  "max_timeout_ms", "unknown_rtt_ms",
                                  "min_unanswered_packets"});
    l.boolean(t, "enabled", &p->watchdog.enabled);
    l.integer(t, "rtt_multiplier", 1, 100, &p->watchdog.rtt_multiplier);
    l.duration<std::chrono::milliseconds>(t, "min_timeout_ms", 1, 60'000,
                                          &p->watchdog.min_timeout);
    l.duration<std::chrono::milliseconds>(t, "max_timeout_ms", 1, 600'000,
                                          &p->watchdog.max_timeout);
    l.duration<std::chrono::milliseconds>(t, "unknown_rtt_ms", 1, 60'000,
                                          &p->watchdog.unknown_rtt);
    l.integer(t, "min_unanswered_packets", 1, 64, &p->watchdog.min_unanswered_packets);
    if (p->watchdog.min_timeout > p->watchdog.max_timeout) {
      const toml::node* n = t->get("min_timeout_ms") ? t->get("min_timeout_ms") : t;
      l.error(n->source(), "watchdog: min_timeout_ms must not exceed max_timeout_ms");
    }
  }
  if (const auto* t = l.table(root, "destination_cache")) {
    l.known_keys(*t, "destination_cache", {"capacity", "ttl_s", "first_penalty_s"});
    l.integer(t, "capacity", 1, 1 << 22, &p->destinations.capacity);
    l.duration<std::chrono::seconds>(t, "ttl_s", 1, 365 * 86400, &p->destinations.ttl);
    l.duration<std::chrono::seconds>(t, "first_penalty_s", 1, 365 * 86400,
                                     &p->destinations.first_penalty);
  }
  if (const auto* t = l.table(root, "flow_table")) {
    l.known_keys(*t, "flow_table", {"capacity", "idle_timeout_s"});
    l.integer(t, "capacity", 16, 1 << 22, &p->flows.capacity);
    l.duration<std::chrono::seconds>(t, "idle_timeout_s", 1, 86400, &p->flows.idle_timeout);
  }
}

// host:port with a port in 1..65535 (host: a name, an IPv4 address or [IPv6]).
bool valid_listen(std::string_view s) {
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view port = s.substr(colon + 1);
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  return !port.empty() && ec == std::errc{} && end == port.data() + port.size() && v >= 1 &&
         v <= 65535;
}

bool valid_interface(std::string_view s) {
  // IFNAMSIZ - 1 bytes, no '/', no whitespace, not "." or "..".
  if (s.empty() || s.size() > 15 || s == "." || s == "..") return false;
  return std::none_of(s.begin(), s.end(),
                      [](char c) { return c == '/' || c == ':' || c <= ' ' || c == 0x7f; });
}

void load_daemon(Loader& l, const toml::table& root, DaemonSettings* d) {
  const toml::table* t = l.table(root, "daemon");
  if (t == nullptr) return;
  l.known_keys(*t, "daemon",
               {"queue_outbound", "queue_inbound", "mark_channel", "mark_native", "mark_mask",
                "routing_table", "channel_interface", "wg_config", "addressing",
                "native_conntrack", "native_gso", "native_prefixes", "metrics_listen",
                "destinations_file", "native_path", "routed_table", "guard_pin_dir",
                "syscall_filter", "channel_kind", "channel_exempt", "tproxy_port",
                "channel_dns"});
  l.integer(t, "queue_outbound", 0, 65535, &d->queue_outbound);
  l.integer(t, "queue_inbound", 0, 65535, &d->queue_inbound);
  if (d->queue_outbound == d->queue_inbound) {
    l.error(t->source(), "daemon: queue_outbound and queue_inbound must differ");
  }
  l.integer(t, "mark_channel", 1, 0xffffffffll, &d->mark_channel);
  l.integer(t, "mark_native", 1, 0xffffffffll, &d->mark_native);
  l.integer(t, "mark_mask", 1, 0xffffffffll, &d->mark_mask);
  if (d->mark_channel == d->mark_native || (d->mark_channel & ~d->mark_mask) != 0 ||
      (d->mark_native & ~d->mark_mask) != 0) {
    l.error(t->source(), "daemon: mark_channel and mark_native must differ and lie within "
                         "mark_mask");
  }
  l.integer(t, "routing_table", 1, 0xffffffffll, &d->routing_table);
  if (d->routing_table >= 253 && d->routing_table <= 255) {
    l.error(t->get("routing_table")->source(),
            "routing_table must not be 253..255 (the kernel's default, main and local "
            "tables), not " + render(*t->get("routing_table")));
  }
  if (const toml::node* n = l.string(t, "channel_interface", &d->channel_interface);
      n && !valid_interface(d->channel_interface)) {
    l.error(n->source(), "channel_interface must be an interface name of 1..15 characters "
                         "without '/', ':' or spaces, not " + render(*n));
  }
  l.string(t, "wg_config", &d->wg_config);
  std::size_t kind = static_cast<std::size_t>(d->channel_kind);
  l.word(t, "channel_kind", {"wireguard", "interface", "tproxy"}, &kind);
  d->channel_kind = static_cast<ChannelKind>(kind);
  l.addresses(t, "channel_exempt", &d->channel_exempt_v4, &d->channel_exempt_v6);
  l.integer(t, "tproxy_port", 1, 65535, &d->tproxy_port);
  if (const toml::node* dns = t->get("channel_dns")) {
    d->channel_dns_set = true;
    l.addresses(t, "channel_dns", &d->channel_dns_v4, &d->channel_dns_v6);
    if (d->channel_dns_v4.size() > 1 || d->channel_dns_v6.size() > 1) {
      l.error(dns->source(), "channel_dns: at most one IPv4 and one IPv6 resolver, not " +
                                 render(*dns));
    }
  }
  if (d->channel_kind != ChannelKind::tproxy && t->get("tproxy_port") != nullptr) {
    l.error(t->get("tproxy_port")->source(),
            "tproxy_port belongs to channel_kind = \"tproxy\"");
  }
  if (d->channel_kind == ChannelKind::tproxy) {
    const toml::node* kind_node = t->get("channel_kind");
    if (t->get("tproxy_port") == nullptr) {
      l.error(kind_node->source(),
              "channel_kind = \"tproxy\" needs tproxy_port: the transparent-proxy port of "
              "your proxy client (ss-redir's -l, a tproxy inbound's listen_port)");
    }
    if (!d->wg_config.empty() || t->get("channel_interface") != nullptr) {
      l.error(kind_node->source(),
              "channel_kind = \"tproxy\" hands channel packets to a local port: "
              "wg_config and channel_interface do not apply");
    }
    if (d->channel_exempt_v4.empty() && d->channel_exempt_v6.empty()) {
      l.error(kind_node->source(),
              "channel_kind = \"tproxy\" needs channel_exempt: the addresses of your proxy "
              "client's servers, whose packets must not be handed back to it");
    }
    d->channel_interface = "lo";
  }
  if (d->channel_kind == ChannelKind::interface) {
    if (!d->wg_config.empty()) {
      l.error(t->get("channel_kind")->source(),
              "channel_kind = \"interface\" routes into an interface another program brings "
              "up; wg_config (a WireGuard channel to bring up) must then be empty");
    }
    if (d->channel_exempt_v4.empty() && d->channel_exempt_v6.empty()) {
      l.error(t->get("channel_kind")->source(),
              "channel_kind = \"interface\" needs channel_exempt: the addresses of the "
              "tunnel's own servers, whose packets must not enter the tunnel");
    }
  }
  std::size_t addressing = static_cast<std::size_t>(d->addressing);
  l.word(t, "addressing", {"nat", "permissive", "stateless"}, &addressing);
  d->addressing = static_cast<Addressing>(addressing);
  if (const toml::node* dns = t->get("channel_dns");
      dns != nullptr && (!d->channel_dns_v4.empty() || !d->channel_dns_v6.empty()) &&
      (d->addressing != Addressing::stateless || d->channel_kind == ChannelKind::tproxy)) {
    l.error(dns->source(), "channel_dns needs addressing = \"stateless\" and a device channel "
                           "(wireguard or interface): the channel device's rules send the "
                           "queries there");
  }
  if (t != nullptr && t->get("native_conntrack") != nullptr) {
    bool track = false;
    l.boolean(t, "native_conntrack", &track);
    d->native_conntrack = track;
  }
  l.boolean(t, "syscall_filter", &d->syscall_filter);
  std::size_t gso = d->native_gso_in_kernel ? 0 : 1;
  l.word(t, "native_gso", {"kernel", "daemon"}, &gso);
  d->native_gso_in_kernel = gso == 0;
  l.prefixes(t, "native_prefixes", &d->native_prefixes_v4, &d->native_prefixes_v6);
  std::size_t path = static_cast<std::size_t>(d->native_path);
  l.word(t, "native_path", {"auto", "queue", "routed"}, &path);
  d->native_path = static_cast<NativePathChoice>(path);
  if (d->channel_kind == ChannelKind::tproxy && d->native_path == NativePathChoice::queue) {
    l.error(t->get("native_path")->source(),
            "channel_kind = \"tproxy\" works with the routed native path only (native_path = "
            "\"routed\" or \"auto\")");
  }
  if (d->native_path == NativePathChoice::routed && d->addressing != Addressing::stateless &&
      d->channel_kind != ChannelKind::tproxy) {
    l.error(t->get("native_path")->source(),
            "native_path = \"routed\" needs addressing = \"stateless\"");
  }
  l.integer(t, "routed_table", 1, 0xffffffffll, &d->routed_table);
  if (d->routed_table == d->routing_table || (d->routed_table >= 253 && d->routed_table <= 255)) {
    l.error(t->source(), "daemon: routed_table must differ from routing_table and not be "
                         "253..255");
  }
  l.string(t, "guard_pin_dir", &d->guard_pin_dir);
  if (const toml::node* n = l.string(t, "metrics_listen", &d->metrics_listen);
      n && !d->metrics_listen.empty() && !valid_listen(d->metrics_listen)) {
    l.error(n->source(), "metrics_listen must be host:port (port 1..65535) or empty, not " +
                             render(*n));
  }
  l.string(t, "destinations_file", &d->destinations_file);
}

// "auto" takes the routed path where it may carry everything the policy sends: stateless
// addressing (the only addressing the routed path implements), and other UDP and other
// protocols native (it sends only DNS, TCP and QUIC to the channel).
void resolve_native_path(Config* c) {
  DaemonSettings& d = c->daemon;
  switch (d.native_path) {
    case NativePathChoice::queue: d.native_path_routed = false; break;
    case NativePathChoice::routed: d.native_path_routed = true; break;
    case NativePathChoice::automatic:
      // (A tproxy channel has no addressing of its own: the proxy client sends.)
      d.native_path_routed = (d.addressing == Addressing::stateless ||
                              d.channel_kind == ChannelKind::tproxy) &&
                             c->policy.other_udp == Route::native &&
                             c->policy.other_protocols == Route::native;
      break;
  }
}

void load_tun(Loader& l, const toml::table& root, TunSettings* tun) {
  const toml::table* t = l.table(root, "tun");
  if (t == nullptr) return;
  l.known_keys(*t, "tun", {"device", "wg_config", "table", "fwmark", "control_socket", "offload",
                             "fast_path"});
  if (const toml::node* n = l.string(t, "device", &tun->device);
      n && !valid_interface(tun->device)) {
    l.error(n->source(), "device must be an interface name of 1..15 characters without '/', "
                         "':' or spaces, not " + render(*n));
  }
  l.string(t, "wg_config", &tun->wg_config);
  l.integer(t, "table", 1, 0xffffffffll, &tun->table);
  if (tun->table >= 253 && tun->table <= 255) {
    l.error(t->get("table")->source(),
            "table must not be 253..255 (the kernel's default, main and local tables), not " +
                render(*t->get("table")));
  }
  l.integer(t, "fwmark", 1, 0xffffffffll, &tun->fwmark);
  if (const toml::node* n = l.string(t, "control_socket", &tun->control_socket);
      n && tun->control_socket.empty()) {
    l.error(n->source(), "control_socket must be a path, not " + render(*n));
  }
  l.boolean(t, "offload", &tun->offload);
  l.boolean(t, "fast_path", &tun->fast_path);
}

}  // namespace

std::string ConfigError::to_string() const {
  std::string s = file;
  if (line != 0) s += ":" + std::to_string(line);
  if (line != 0 && column != 0) s += ":" + std::to_string(column);
  return s + ": " + message;
}

ConfigLoad parse_config(std::string_view text, std::string_view file) {
  ConfigLoad out;
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    out.errors.push_back({std::string(file), static_cast<std::uint32_t>(e.source().begin.line),
                          static_cast<std::uint32_t>(e.source().begin.column),
                          std::string(e.description())});
    return out;
  }
  Loader l(file, &out.errors);
  l.known_keys(root, "", {"classifier", "hold", "native_switch", "watchdog",
                          "destination_cache", "flow_table", "daemon", "tun"});
  load_policy(l, root, &out.config.policy);
  load_daemon(l, root, &out.config.daemon);
  load_tun(l, root, &out.config.tun);
  resolve_native_path(&out.config);
  return out;
}

ConfigLoad load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigLoad out;
    out.errors.push_back({path, 0, 0, std::string("cannot read: ") + std::strerror(errno)});
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

bool tracks_native(const DaemonSettings& d) {
  return d.native_conntrack.value_or(d.addressing != Addressing::nat);
}

std::string_view to_string(Addressing a) {
  switch (a) {
    case Addressing::nat: return "nat";
    case Addressing::permissive: return "permissive";
    case Addressing::stateless: return "stateless";
  }
  return "?";
}

std::string_view to_string(Route r) { return r == Route::native ? "native" : "channel"; }

std::string_view to_string(ChannelKind k) {
  switch (k) {
    case ChannelKind::wireguard: return "wireguard";
    case ChannelKind::interface: return "interface";
    case ChannelKind::tproxy: return "tproxy";
  }
  return "?";
}

}  // namespace quicstep::client::core
