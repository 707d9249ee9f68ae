// The quicstepd configuration file: TOML, loaded into plain structs (the classifier's
// Policy and the daemon's own settings). client/quicstepd.example.toml documents every key.
//
// Refused, with file, line, column and a reason that quotes the bad value:
//   - TOML syntax errors (toml++'s message and position);
//   - unknown tables or keys (a typo must not be silently ignored);
//   - a value of the wrong type, or out of its range (listed in the example file);
//   - an enumeration value that is not one of its words ("nat" / "permissive", ...).
// Every error found is reported, not only the first. Loading does file I/O and may allocate:
// it is for start-up and SIGHUP, never for the packet path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/core/policy.hpp"

namespace quicstep::client::core {

// How packets sent to the channel are addressed (docs/DESIGN.md invariant 2).
enum class NativePathChoice : std::uint8_t { automatic, queue, routed };

// What carries the channel (client/README.md, "Channel kinds").
enum class ChannelKind : std::uint8_t {
  wireguard,  // a WireGuard interface: brought up from wg_config, or an existing one
  interface,  // any layer-3 tunnel interface another program brings up (a TUN of sing-box,
              // Xray, Hysteria2, openconnect...): channel packets are routed into it
  tproxy,     // a local transparent-proxy port of the user's proxy client (ss-redir -u,
              // sing-box/Xray/Clash tproxy inbounds): channel packets are routed to `lo`
              // and handed to it by nft `tproxy` (routed native path only)
};

enum class Addressing : std::uint8_t {
  nat,         // rewritten to the tunnel address: works with an ordinary provider
  permissive,  // keep the native source address: the paper's mode, needs a provider that
               // accepts it
  stateless,   // as nat, but rewritten by stateless nft rules (no conntrack in the
               // namespace: the native bulk path pays no conntrack/NAT hooks)
};

// The daemon's settings that are not classification policy.
struct DaemonSettings {
  // nfqueue number for outbound short headers to QUIC ports.
  std::uint16_t queue_outbound = 0;
  // nfqueue number for inbound packets of flows under watch.
  std::uint16_t queue_inbound = 1;
  // Packet mark that routes a packet into the channel (policy routing by fwmark).
  std::uint32_t mark_channel = 0x51;
  // Packet mark of a verdict that sends a packet on the native path.
  std::uint32_t mark_native = 0x52;
  // The bits of the mark quicstepd owns (other software may use the rest).
  std::uint32_t mark_mask = 0xff;
  // Routing table of the channel (default route via the WireGuard interface).
  std::uint32_t routing_table = 51820;
  ChannelKind channel_kind = ChannelKind::wireguard;
  // The channel's interface: WireGuard's (unique machine-wide with wireguard-go), or the
  // tunnel interface of channel_kind "interface".
  std::string channel_interface = "qs-wg0";
  // wg-quick style config to bring the channel up from; empty: the interface exists.
  std::string wg_config;
  // Addresses that never take the channel: the servers of the tunnel behind an "interface"
  // channel (its own packets must not enter it; required there). A WireGuard channel's
  // peer endpoints are exempt without being listed.
  std::vector<std::string> channel_exempt_v4, channel_exempt_v6;
  // channel_kind "tproxy": the proxy client's transparent-proxy port, on 127.0.0.1 and ::1
  // (a socket bound to 0.0.0.0 or :: there serves too). Required with that kind; the
  // channel interface is then `lo`.
  std::uint16_t tproxy_port = 0;
  // Where the DNS queries that enter the channel go (client/README.md, "DNS through the
  // channel"): at most one resolver per family; a query to port 53 that enters the channel
  // is sent there instead of to the resolver it was addressed to (the host's: a router or
  // the ISP's, unreachable or lying from the provider's side), and its answer comes back
  // from the address asked. Not set (channel_dns_set false): the wg-quick file's DNS line,
  // the resolver wg-quick would point the system at; an empty list: off. Stateless
  // addressing only (the channel device's own rules rewrite it).
  bool channel_dns_set = false;
  std::vector<std::string> channel_dns_v4, channel_dns_v6;
  Addressing addressing = Addressing::stateless;
  // Whether conntrack sees native QUIC packets. Unset (the default): yes with stateless and
  // permissive addressing, no with nat. false: native flows are `notrack` both ways (the bulk
  // path skips conntrack and NAT: needed by nat addressing, whose masquerade binding would
  // otherwise apply to native packets of the same 5-tuple, unless zones keep it apart;
  // faster where something else made conntrack track this namespace, but a stateful firewall
  // that drops untracked packets then drops native QUIC). true: tracked (nat: channel
  // packets in conntrack zone 1). Tracking costs nothing where nothing registered conntrack,
  // while `notrack` costs every native packet ~40 ns (bench_rule_cost.py).
  std::optional<bool> native_conntrack;
  // GSO super-packets (one send, many datagrams) of a flow already decided native: false
  // ("daemon", the default): queued and decided segment by segment, so no long-header
  // segment ever goes native; true ("kernel"): native in the kernel, judged by their first
  // segment (client/README.md, "GSO"; faster for applications that send with GSO).
  bool native_gso_in_kernel = false;
  // After setup the daemon allows itself only a system service's calls (seccomp; client/
  // daemon/syscall_filter.hpp). false: no filter (to trace the daemon with a tool that
  // needs more, say).
  bool syscall_filter = true;
  // Destinations that never use the channel (a LAN: printers, NAS), as prefixes. Everything
  // to them goes natively, handshakes (TCP, QUIC) included, except DNS (port 53), which
  // stays on the channel. Only what the user lists; empty by default.
  std::vector<std::string> native_prefixes_v4, native_prefixes_v6;
  // How native packets leave (client/README.md): "queue": netfilter rules on every outbound
  // packet and a queue for undecided flows; "routed": policy routing sends DNS, TCP and QUIC
  // to the channel, a flow the daemon moves native gets a rule of its own, and a tc guard on
  // every native device drops what must not leave there (stateless addressing, other UDP and
  // other protocols native); "auto" (the default): routed where the config allows it, else
  // the queue path; the daemon also takes the queue path when the routed one cannot start
  // (no BPF), and says why.
  NativePathChoice native_path = NativePathChoice::automatic;
  // The choice resolved by the config (parse_config): true for "routed", and for "auto"
  // where the config allows the routed path. The daemon clears it when "auto" falls back.
  bool native_path_routed = true;
  // The routed native path's channel table (a default route through the channel with the
  // native source address). Its own: flushed at exit.
  std::uint32_t routed_table = 51821;
  // Where the routed native path pins its guard (a bpffs directory).
  std::string guard_pin_dir = "/sys/fs/bpf/quicstep";
  // Prometheus text endpoint, host:port; empty: off. Localhost by default.
  std::string metrics_listen = "127.0.0.1:9464";
  // The prober's non-migrating destinations to preload (destination_cache.hpp); empty: none.
  std::string destinations_file;
};

// quicstep-tun's own settings, the [tun] table (client/tun/README.md); quicstepd ignores
// them. Its command-line options override them.
struct TunSettings {
  // The TUN device it creates (1..15 characters).
  std::string device = "qst0";
  // The channel's wg-quick file (numeric endpoints); required, here or by --wg-config.
  std::string wg_config;
  // The routing table of the TUN's default routes (not 253..255).
  std::uint32_t table = 51830;
  // The mark of the engine's own (protected) sockets, which a rule sends to the main table.
  std::uint32_t fwmark = 51830;
  // quicstepctl's status socket.
  std::string control_socket = "/run/quicstep-tun.sock";
  // UDP GSO writes into the TUN and UDP_GRO on relay sockets, where the kernel has them.
  bool offload = true;
  // Linux: a tc program on the TUN sends a confirmed flow's QUIC short headers natively
  // without crossing the engine (client/tun/linux/tun_fast_path.hpp), where the kernel has
  // tcx (6.6+); elsewhere, or false, every packet crosses the engine as on Android.
  bool fast_path = true;
};

struct Config {
  Policy policy;
  DaemonSettings daemon;
  TunSettings tun;
};

struct ConfigError {
  std::string file;
  std::uint32_t line = 0;    // 1-based; 0 when the error has no position (unreadable file)
  std::uint32_t column = 0;  // 1-based; 0 when unknown
  std::string message;

  // "file:line:column: message" (position parts omitted when unknown).
  std::string to_string() const;
};

struct ConfigLoad {
  Config config;                    // meaningful only when ok()
  std::vector<ConfigError> errors;  // empty when ok()
  bool ok() const { return errors.empty(); }
};

// Parses TOML text; `file` names it in errors. Missing keys keep their defaults.
ConfigLoad parse_config(std::string_view text, std::string_view file);

// Reads and parses the file at `path`. Errors: those of parse_config, plus one error (line 0)
// when the file cannot be read.
ConfigLoad load_config(const std::string& path);

// Whether conntrack sees native QUIC packets: native_conntrack if set, else every
// addressing but nat (whose masquerade bindings must be kept off native packets).
bool tracks_native(const DaemonSettings& d);

std::string_view to_string(Addressing a);
std::string_view to_string(Route r);
std::string_view to_string(ChannelKind k);

}  // namespace quicstep::client::core
