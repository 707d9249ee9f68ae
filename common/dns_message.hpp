// DNS messages (RFC 1035): the header and the question section, parsed from untrusted bytes
// (the censor and the classifier read names from queries), and an encoder used by tests now
// and by the lab's censor later, when it forges answers.
//
// Names come out as lower-case dotted text without the final dot ("open.test"; the root is
// "."). Label bytes that would make the text ambiguous or unprintable are escaped as in
// zone files: "\." and "\\", and "\DDD" (decimal) for bytes outside 0x21..0x7e. The encoder
// takes the same form, so parse and encode round-trip.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/byte_writer.hpp"
#include "common/error.hpp"

namespace quicstep::common {

inline constexpr std::size_t kDnsHeaderLength = 12;
inline constexpr std::size_t kDnsMaxLabelLength = 63;
inline constexpr std::size_t kDnsMaxNameLength = 255;  // wire form, final zero included
// Compression pointers followed for one name. Pointers must also point strictly before
// where the current run of labels began, so no chain can loop; this bounds the work more.
inline constexpr std::size_t kDnsMaxPointerHops = 32;
// Questions parsed from one message; real queries carry one.
inline constexpr std::size_t kDnsMaxQuestions = 16;

namespace dns_type {
inline constexpr std::uint16_t kA = 1;
inline constexpr std::uint16_t kNs = 2;
inline constexpr std::uint16_t kCname = 5;
inline constexpr std::uint16_t kSoa = 6;
inline constexpr std::uint16_t kPtr = 12;
inline constexpr std::uint16_t kMx = 15;
inline constexpr std::uint16_t kTxt = 16;
inline constexpr std::uint16_t kAaaa = 28;
inline constexpr std::uint16_t kOpt = 41;
inline constexpr std::uint16_t kSvcb = 64;
inline constexpr std::uint16_t kHttps = 65;
inline constexpr std::uint16_t kAny = 255;
}  // namespace dns_type

inline constexpr std::uint16_t kDnsClassIn = 1;

struct DnsHeader {
  std::uint16_t id = 0;
  bool qr = false;          // false: query, true: response
  std::uint8_t opcode = 0;  // 4 bits; 0 is a standard query
  bool aa = false;
  bool tc = false;
  bool rd = false;
  bool ra = false;
  bool ad = false;
  bool cd = false;
  std::uint8_t rcode = 0;  // 4 bits (the header's part of it)
  std::uint16_t qdcount = 0;
  std::uint16_t ancount = 0;
  std::uint16_t nscount = 0;
  std::uint16_t arcount = 0;
};

struct DnsQuestion {
  std::string name;  // lower-case dotted text, see the file comment
  std::uint16_t qtype = dns_type::kA;
  std::uint16_t qclass = kDnsClassIn;
};

// What this module understands of a message. Records (answer, authority, additional) are
// counted in the header but not parsed yet.
struct DnsMessage {
  DnsHeader header;
  std::vector<DnsQuestion> questions;
};

// --- Parsing (untrusted bytes) ---

// The 12-byte header at the start of `message`. Errors: truncated.
Result<DnsHeader> parse_dns_header(Bytes message);

// Reads the name at `reader`'s position; `reader` must span the whole message, because
// compression pointers are offsets from its start. On success the reader is past the name
// (past its first pointer, if any); on error it has consumed nothing.
// Errors:
//   truncated      - the name or a pointer runs past the message;
//   bad_value      - a label type 0x40 or 0x80 (extended / reserved, so no label is over 63),
//                    or a pointer that does not point strictly backwards (see above);
//   limit_exceeded - the name is over 255 bytes, or more than kDnsMaxPointerHops pointers.
Result<std::string> read_dns_name(ByteReader& reader);

// The header and every question of `message`; bytes after the questions are ignored.
// Errors: truncated; limit_exceeded when qdcount > kDnsMaxQuestions; read_dns_name's.
Result<DnsMessage> parse_dns_message(Bytes message);

// DNS over TCP (RFC 1035 §4.2.2, RFC 7766): each message has a 2-byte length prefix.
struct DnsTcpFrame {
  Bytes message;             // the message, without its prefix
  std::size_t frame_length;  // 2 + message.size(): where the next frame starts
};
// The first framed message of a TCP stream's bytes.
// Errors: incomplete - fewer than 2 bytes, or fewer than the prefix announces (read more);
//         bad_length - the prefix announces fewer than 12 bytes, less than any message.
Result<DnsTcpFrame> parse_dns_tcp_frame(Bytes stream);

// --- Encoding (trusted input: tests, the lab's forged answers) ---

// Appends `name` (dotted text as above; "" and "." are the root) in wire form, without
// compression.
// Errors: bad_value - an empty label ("a..b"), a label over 63 bytes, or a bad escape;
//         limit_exceeded - over 255 bytes in wire form.
Status write_dns_name(ByteWriter& writer, std::string_view name);

// Appends the header as given, counts included. Never fails.
void write_dns_header(ByteWriter& writer, const DnsHeader& header);

// Appends the whole message. The counts written come from the message's sections, not from
// message.header: qdcount = questions.size(), and 0 for the sections not supported yet.
// Errors: write_dns_name's; limit_exceeded for more than 65535 questions. On error the
// writer may hold a partial message: discard it.
Status encode_dns_message(ByteWriter& writer, const DnsMessage& message);

// Appends the message with its 2-byte TCP length prefix. Errors: encode_dns_message's;
// limit_exceeded when the message is over 65535 bytes.
Status encode_dns_tcp_message(ByteWriter& writer, const DnsMessage& message);

// A standard recursive query (RD set) for one name and type.
DnsMessage make_dns_query(std::uint16_t id, std::string_view name, std::uint16_t qtype);

}  // namespace quicstep::common
