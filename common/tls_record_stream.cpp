#include "common/tls_record_stream.hpp"

#include <algorithm>
#include <array>

namespace quicstep::common {

TlsRecordStream::TlsRecordStream(std::size_t max_bytes) : max_bytes_(max_bytes), tcp_(max_bytes) {}

Status TlsRecordStream::fail(Error error) {
  failed_ = true;
  error_ = error;
  return error;
}

Status TlsRecordStream::add_segment(std::uint32_t relative_seq, Bytes payload) {
  if (failed_) return error_;
  if (complete_ || payload.empty() || relative_seq >= max_bytes_) return {};
  // Keep only what fits under the bound; anything later is after the ClientHello or, if
  // the ClientHello needs it, reported by deframe() as limit_exceeded.
  const std::size_t room = max_bytes_ - relative_seq;
  const Bytes kept = payload.first(std::min(payload.size(), room));
  if (auto s = tcp_.add(relative_seq, kept); !s) return fail(s.error());
  return deframe();
}

// Checks the ClientHello header as early as it is known, even inside a record that is not
// complete yet, so a message that cannot fit is refused before the bound fills up.
Status TlsRecordStream::check_header(Bytes partial_record) {
  std::array<std::uint8_t, kHandshakeHeaderLength> header{};
  std::size_t n = std::min(handshake_.size(), header.size());
  std::copy_n(handshake_.begin(), n, header.begin());
  const std::size_t more = std::min(header.size() - n, partial_record.size());
  std::copy_n(partial_record.begin(), more, header.begin() + static_cast<std::ptrdiff_t>(n));
  n += more;
  auto needed = client_hello_needed_length(Bytes(header.data(), n));
  if (!needed) return fail(needed.error());
  if (*needed > max_bytes_) return fail(Error::limit_exceeded);
  return {};
}

// Moves every complete record of the contiguous TCP prefix into handshake_, until the
// ClientHello is complete.
Status TlsRecordStream::deframe() {
  const Bytes stream = tcp_.contiguous();
  if (!stream.empty() && (stream[0] & 0x80) != 0) return fail(Error::unsupported);
  while (!complete_) {
    ByteReader r(stream.subspan(record_offset_));
    if (r.remaining() < kTlsRecordHeaderLength) break;
    const std::uint8_t type = *r.u8();
    const std::uint16_t version = *r.u16();
    const std::uint16_t length = *r.u16();
    if (type != kTlsContentHandshake) return fail(Error::bad_value);
    if ((version >> 8) != 0x03) return fail(Error::bad_value);
    if (length == 0) return fail(Error::bad_value);  // RFC 8446 §5.1
    if (length > kMaxTlsPlaintextLength) return fail(Error::bad_length);
    auto fragment = r.bytes(length);
    if (!fragment) {  // the rest of the record has not arrived yet
      if (auto s = check_header(r.rest()); !s) return s;
      break;
    }
    const std::size_t size = handshake_.size() + fragment->size();
    if (size > max_bytes_) return fail(Error::limit_exceeded);
    if (size > handshake_.capacity()) {  // grow, but never past the bound
      handshake_.reserve(std::min(max_bytes_, std::max(size, 2 * handshake_.capacity())));
    }
    handshake_.insert(handshake_.end(), fragment->begin(), fragment->end());
    record_offset_ += kTlsRecordHeaderLength + length;

    if (auto s = check_header({}); !s) return s;
    complete_ = *client_hello_needed_length(handshake()) <= handshake_.size();
  }
  // A stream filled to the bound without completing the ClientHello never will.
  if (!complete_ && tcp_.contiguous_length() == max_bytes_) return fail(Error::limit_exceeded);
  return {};
}

}  // namespace quicstep::common
