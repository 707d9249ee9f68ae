// quicstep-inspect: reads a pcap and prints, one JSON line per packet, what an on-path
// censor sees: addresses, ports, QUIC header fields (decrypted packet numbers of Initials),
// the SNI and ALPN of each ClientHello once complete (QUIC and TLS over TCP), DNS names.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "common/handshake_observer.hpp"
#include "measurement/inspect/packet_report.hpp"
#include "measurement/inspect/pcap_reader.hpp"
#include "quicstep_version.hpp"

namespace {

struct Options {
  std::string input;
  bool only_handshakes = false;
  bool summary = false;
  bool first_datagram_only = false;
};

int run(const Options& options) {
  using namespace quicstep;
  std::string error;
  auto reader = inspect::PcapReader::open(options.input, error);
  if (!reader) {
    std::cerr << "quicstep-inspect: cannot read " << options.input << ": " << error << "\n";
    return 1;
  }
  common::HandshakeObserverConfig config;
  config.first_datagram_only = options.first_datagram_only;
  common::HandshakeObserver observer(config);
  std::uint64_t index = 0;
  std::uint64_t link_errors = 0;
  while (auto frame = reader->next()) {
    ++index;
    auto ip = common::ip_datagram_of_frame(reader->link_type(), frame->bytes);
    if (!ip) {
      ++link_errors;
      if (!options.only_handshakes && !options.summary) {
        std::cout << nlohmann::json{{"n", index}, {"error", std::string(common::to_string(ip.error()))}}.dump() << "\n";
      }
      continue;
    }
    auto seen = observer.observe(*ip, frame->time);
    if (options.summary) continue;
    const bool handshake = seen.client_hello || seen.client_hello_error || seen.dns;
    if (options.only_handshakes && !handshake) continue;
    std::cout << inspect::packet_report(index, *frame, seen).dump() << "\n";
  }
  const auto& c = observer.counters();
  if (options.summary) {
    std::cout << nlohmann::json{{"packets", index},
                                {"link_errors", link_errors},
                                {"ip_errors", c.ip_errors},
                                {"initials_decrypted", c.quic_initials_decrypted},
                                {"initial_decrypt_failures", c.quic_decrypt_failures},
                                {"client_hellos", c.client_hellos},
                                {"client_hello_errors", c.client_hello_errors},
                                {"dns_messages", c.dns_messages}}
                     .dump()
              << "\n";
  }
  if (!reader->error().empty()) {
    std::cerr << "quicstep-inspect: " << options.input << ": read stopped after frame " << index << ": "
              << reader->error() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quicstep-inspect: what a censor sees in a capture, as JSON lines"};
  app.set_version_flag("--version", std::string("quicstep-inspect ") + quicstep::kVersion);
  Options options;
  app.add_option("pcap", options.input, "pcap or pcapng file ('-' for standard input)")->required();
  app.add_flag("--handshakes", options.only_handshakes,
               "print only packets that complete a ClientHello (SNI) or carry DNS");
  app.add_flag("--summary", options.summary, "print only a summary of counts");
  app.add_flag("--first-datagram-only", options.first_datagram_only,
               "read QUIC ClientHellos from the first Initial datagram only, as the GFW does");
  CLI11_PARSE(app, argc, argv);
  return run(options);
}
