// PcapReader: reads captured frames from a pcap or pcapng file with libpcap. The I/O edge
// of quicstep-inspect; everything it yields goes to sans-IO parsers.
#pragma once

#include <pcap/pcap.h>

#include <memory>
#include <optional>
#include <string>

#include "common/byte_reader.hpp"
#include "common/link_layer.hpp"
#include "common/timestamp.hpp"

namespace quicstep::inspect {

struct CapturedFrame {
  common::Timestamp time;       // capture time, ns since the Unix epoch
  common::Bytes bytes;          // valid until the next call to next()
  std::uint32_t wire_length;    // length on the wire; > bytes.size() when snapped
};

class PcapReader {
 public:
  // Opens `path` ("-" for standard input). On failure returns nullptr and sets `error` to
  // libpcap's message, which names the file and the reason.
  static std::unique_ptr<PcapReader> open(const std::string& path, std::string& error);

  common::LinkType link_type() const { return link_type_; }

  // The next frame, or nullopt at the end of the file. A read error after the first frame
  // (a file cut short) ends the stream and is reported by error().
  std::optional<CapturedFrame> next();
  const std::string& error() const { return error_; }

 private:
  struct Closer {
    void operator()(pcap_t* p) const { pcap_close(p); }
  };
  explicit PcapReader(pcap_t* handle);

  std::unique_ptr<pcap_t, Closer> handle_;
  common::LinkType link_type_;
  bool nanosecond_;
  std::string error_;
};

}  // namespace quicstep::inspect
