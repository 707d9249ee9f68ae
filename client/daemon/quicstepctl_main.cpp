// quicstepctl: asks a running quicstepd over its control socket.
//   quicstepctl status [--json]   paths, per-path packets and bytes, load ratio, watchdog;
//                                 also of the TUN engine (--socket /run/quicstep-tun.sock)
//   quicstepctl flows             the tracked QUIC flows (JSON)
// Exit codes: 0 ok, 1 the daemon is not reachable, 2 bad command line.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>

#include "quicstep_version.hpp"

namespace {

// One request, the whole reply; "" when the socket cannot be reached.
std::string ask(const std::string& path, const std::string& request) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string line = request + "\n";
    if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
      char buf[8192];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, n);
    }
  }
  ::close(fd);
  return reply;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

// What quicstepd and the TUN engine report alike: the paths, the flows, the watchdog.
void print_paths_and_flows(const nlohmann::json& s) {
  const nlohmann::json sw = s.value("native_switch", nlohmann::json::object());
  for (const char* p : {"channel", "native"}) {
    std::cout << "  " << p << ": out " << s["paths"][p]["packets"] << " packets, "
              << human_bytes(s["paths"][p]["bytes"].get<double>()) << "; in "
              << s["paths"][p]["in_packets"] << " packets, "
              << human_bytes(s["paths"][p]["in_bytes"].get<double>()) << "\n";
  }
  std::printf("  channel load ratio: %.2f%%\n", 100.0 * s["channel_load_ratio"].get<double>());
  std::cout << "flows: " << s["flows"]["tracked"] << " tracked\n"
            << "watchdog: " << s["watchdog"]["moved_native"] << " moved native, "
            << s["watchdog"]["confirmed"] << " confirmed, " << s["watchdog"]["failed_back"]
            << " failed back, " << s["watchdog"].value("quiet_at_bound", 0)
            << " quiet at the bound (not judged), " << s["watchdog"]["non_migrating_destinations"]
            << " non-migrating destinations\n"
            << "native switch: " << sw.value("switch_waits", 0)
            << " flows waited for their Finished (" << sw.value("wait_ms_total", 0.0)
            << " ms in all)\n";
  const nlohmann::json pa = s.value("preferred_address", nlohmann::json::object());
  if (pa.value("client_moves", 0) != 0 || pa.value("destinations", 0) != 0) {
    std::cout << "preferred address: " << pa.value("client_moves", 0)
              << " clients moved to a server's preferred address (" << pa.value("after_move", 0)
              << " from a flow already native), " << pa.value("destinations", 0)
              << " servers learnt, " << pa.value("held_flows", 0)
              << " flows held on the channel until their client moved\n";
  }
}

// The channel's resolvers (client/README.md, "DNS through the channel"), when there are.
void print_channel_dns(const nlohmann::json& ch) {
  if (!ch.contains("dns") || ch["dns"].empty()) return;
  std::cout << "channel DNS: queries go to";
  const char* sep = " ";
  for (const auto& a : ch["dns"]) {
    std::cout << sep << a.get<std::string>();
    sep = ", ";
  }
  std::cout << " (" << ch.value("dns_redirected", 0) << " sent there instead of their own)\n";
}

// Self-healing (client/kernel/healer.hpp; quicstepd and quicstep-tun): one line, naming
// each piece that is not in place or that another tool has removed.
void print_healing(const nlohmann::json& s) {
  if (!s.contains("healing") || !s["healing"].contains("pieces")) return;
  const nlohmann::json& h = s["healing"];
  std::cout << "self-healing: " << (h.value("healthy", false) ? "all in place" : "NOT all in place")
            << " (" << h.value("checks", 0) << " checks)";
  const char* sep = "; ";
  for (const auto& [piece, v] : h["pieces"].items()) {
    const std::string state = v.value("state", "");
    if (state == "ok" && v.value("removals", 0) == 0) continue;
    std::cout << sep << piece << " " << state << ": removed " << v.value("removals", 0)
              << ", restored " << v.value("restores", 0) << ", failed "
              << v.value("failures", 0);
    if (v.value("restores", 0) > 0) {
      std::ostringstream ms;
      ms << std::fixed << std::setprecision(1) << v.value("last_recovery_ms", 0.0);
      std::cout << ", last back in " << ms.str() << " ms";
    }
    sep = "; ";
  }
  std::cout << "\n";
}

// The TUN engine's status (quicstep-tun, qs-engine: client/tun/engine_status.hpp): its
// relays instead of queues, what it did with the TUN's packets, and its loop's failures.
void print_tun_engine(const nlohmann::json& s) {
  std::cout << "TUN engine; WireGuard helper pid " << s.value("helper_pid", -1) << "\n";
  if (s.contains("channel") && s["channel"].contains("health")) {
    const nlohmann::json& ch = s["channel"];
    std::cout << "channel: WireGuard (its helper), " << ch["health"].get<std::string>();
    if (ch.contains("handshake_age_s") && ch["handshake_age_s"].is_number()) {
      std::cout << ", handshake " << ch["handshake_age_s"] << " s ago";
    }
    std::cout << ", unanswered " << ch.value("unanswered_episodes", 0) << " times\n";
  }
  std::cout << "paths:\n";
  print_paths_and_flows(s);
  if (s.contains("channel")) print_channel_dns(s["channel"]);
  const nlohmann::json& r = s["relays"];
  std::cout << "relays: " << r["open"] << " open of " << r["capacity"] << " (" << r["opened"]
            << " opened, " << r["closed"] << " closed, " << r["evicted"] << " evicted, "
            << r["open_failed"] << " could not open)\n";
  if (s.contains("fast_path")) {
    const nlohmann::json& f = s["fast_path"];
    if (f.is_object()) {
      std::cout << "fast path: " << f.value("flows", 0) << " flows on it; the kernel sent "
                << f.value("packets", 0) << " packets (" << f.value("bytes", 0)
                << " bytes) of confirmed flows past the engine; " << f.value("installed", 0)
                << " installs, " << f.value("install_failed", 0) << " refused\n";
    } else {
      std::cout << "fast path: off (every packet crosses the engine)\n";
    }
  }
  const nlohmann::json& e = s["engine"];
  std::cout << "from the TUN: " << e["from_tun"]["packets"] << " packets ("
            << e["malformed"] << " malformed, " << e["dropped"] << " dropped, " << e["held"]
            << " held for the native switch); " << e["network_changes"]
            << " network changes followed";
  if (s.contains("loop") && s["loop"].contains("relays_lingered")) {
    const nlohmann::json& l = s["loop"];
    std::cout << " (" << l["relays_lingered"] << " old relay sockets kept, "
              << l.value("relays_lingering", 0) << " still open; "
              << l.value("linger_datagrams", 0) << " datagrams came there)";
  }
  std::cout << "\n";
  if (s.contains("loop")) {
    const nlohmann::json& l = s["loop"];
    std::cout << "failures: " << l["protect_failed"] << " protect, " << l["relay_socket_failed"]
              << " relay socket, " << l["native_send_failed"] << " native send, "
              << l["channel_send_dropped"] << " channel send, " << l["tun_write_dropped"]
              << " TUN write";
    const std::string last = l.value("last_error", "");
    if (!last.empty()) std::cout << " (last: " << last << ")";
    std::cout << "\n";
  }
  if (s.contains("restarts")) {
    std::cout << "restarts: WireGuard helper " << s["restarts"].value("helper", 0)
              << ", TUN device " << s["restarts"].value("tun_device", 0) << "\n";
  }
  print_healing(s);
}

void print_human(const nlohmann::json& s) {
  const nlohmann::json& ch = s["channel"];
  if (ch.value("kind", "") == "tproxy" && ch.contains("proxy")) {
    std::cout << "channel: the proxy client at port " << ch["proxy"]["port"]
              << (ch.value("up", true) ? "" : " (not listening: failed closed)");
  } else {
    std::cout << "channel: " << ch["interface"].get<std::string>() << " ("
              << ch["addressing"].get<std::string>() << ")";
  }
  if (ch.contains("health")) {
    std::cout << ", " << ch["health"].get<std::string>();
    if (ch.contains("handshake_age_s") && ch["handshake_age_s"].is_number()) {
      std::cout << ", handshake " << ch["handshake_age_s"] << " s ago";
    }
    std::cout << ", unanswered " << ch.value("unanswered_episodes", 0) << " times";
  }
  std::cout << "\n";
  print_channel_dns(ch);
  std::cout << "native path: " << s.value("native_path", "queue");
  if (s.contains("routed_unavailable")) {
    std::cout << " (routed unavailable: " << s["routed_unavailable"].get<std::string>() << ")";
  }
  std::cout << "\n";
  print_paths_and_flows(s);
  std::cout << "queues: outbound " << s["queues"]["outbound"]["packets"] << " packets ("
            << s["queues"]["outbound"]["enobufs"] << " overruns, "
            << s["queues"]["outbound"].value("deferred", 0)
            << " waited for the native switch), inbound "
            << s["queues"]["inbound"]["packets"] << "\n";
  if (s.value("native_path", "queue") == "routed" && s.contains("routed")) {
    const nlohmann::json& r = s["routed"];
    const nlohmann::json& drops = r["guard_drops"];
    std::cout << "routed native path: " << r["flows_with_rule"] << " flow rules ("
              << r["rules_added"] << " added, " << r["rules_deleted"] << " deleted, "
              << r["rule_failures"] << " failed), " << r["flows_watched"] << " watched; guard on "
              << r["devices_guarded"] << " devices, dropped " << drops["long_header"]
              << " long headers, " << drops["dns"] << " DNS, " << drops["tcp"] << " TCP, "
              << drops["gso"] << " GSO batches, " << drops["raw_fragment"]
              << " raw fragments; " << r["observed_packets"] << " channel packets seen ("
              << r["observed_lost"] << " copies lost)\n";
    if (r.contains("native_source")) {
      auto text = [](const nlohmann::json& a) {
        return a.is_string() && !a.get<std::string>().empty() ? a.get<std::string>()
                                                              : std::string("-");
      };
      std::cout << "native source: " << text(r["native_source"]["v4"]) << " / "
                << text(r["native_source"]["v6"]) << " (" << r.value("source_changes", 0)
                << " changes followed)\n";
    }
    if (r.contains("switch_hold") && r["switch_hold"].value("on", false)) {
      const nlohmann::json& sh = r["switch_hold"];
      std::cout << "hold at the switch: " << sh["flows"] << " flows switching ("
                << sh["flows_added"] << " so far, " << sh["failures"] << " set failures), "
                << sh["held_now"] << " packets held now, " << sh["to_channel"]
                << " sent on to the channel\n";
    }
  }
  print_healing(s);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstepctl: ask quicstepd"};
  app.set_version_flag("--version", std::string("quicstepctl ") + quicstep::kVersion);
  std::string socket_path = "/run/quicstep/control.sock";
  bool json = false;
  app.add_option("--socket", socket_path, "control socket");
  auto* status = app.add_subcommand("status", "paths, bytes, load ratio, watchdog");
  status->add_flag("--json", json, "machine-readable");
  app.add_subcommand("flows", "tracked QUIC flows (JSON)");
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const std::string request = status->parsed() ? "status" : "flows";
  const std::string reply = ask(socket_path, request);
  if (reply.empty()) {
    std::cerr << "quicstepctl: quicstepd is not reachable at " << socket_path << "\n";
    return 1;
  }
  if (request == "flows" || json) {
    std::cout << reply;
    return 0;
  }
  auto doc = nlohmann::json::parse(reply, nullptr, false);
  if (doc.is_discarded() || !doc.contains("paths")) {
    std::cout << reply;
    return 1;
  }
  // The TUN engine answers with its relays and its own counters instead of a channel
  // interface and queues.
  try {
    if (doc.contains("engine") && doc.contains("relays")) {
      print_tun_engine(doc);
    } else {
      print_human(doc);
    }
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "quicstepctl: a status reply this version cannot show (" << e.what()
              << "); --json prints it as it came\n";
    return 1;
  }
  return 0;
}
