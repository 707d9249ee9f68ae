#include "measurement/inspect/pcap_reader.hpp"

namespace quicstep::inspect {

std::unique_ptr<PcapReader> PcapReader::open(const std::string& path, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* handle =
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (handle == nullptr) {
    error = errbuf;
    return nullptr;
  }
  return std::unique_ptr<PcapReader>(new PcapReader(handle));
}

PcapReader::PcapReader(pcap_t* handle)
    : handle_(handle),
      link_type_(static_cast<common::LinkType>(pcap_datalink(handle))),
      nanosecond_(pcap_get_tstamp_precision(handle) == PCAP_TSTAMP_PRECISION_NANO) {}

std::optional<CapturedFrame> PcapReader::next() {
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(handle_.get(), &header, &data);
  if (rc == PCAP_ERROR_BREAK) return std::nullopt;  // end of file
  if (rc != 1) {
    error_ = pcap_geterr(handle_.get());
    return std::nullopt;
  }
  const std::int64_t sub = header->ts.tv_usec;
  CapturedFrame frame;
  frame.time.ns = static_cast<std::int64_t>(header->ts.tv_sec) * 1'000'000'000 + (nanosecond_ ? sub : sub * 1000);
  frame.bytes = common::Bytes(data, header->caplen);
  frame.wire_length = header->len;
  return frame;
}

}  // namespace quicstep::inspect
