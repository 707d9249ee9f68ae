#include "common/tls_record_stream.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "support/client_hello_builder.hpp"
#include "support/rfc_client_hellos.hpp"

namespace quicstep::common {
namespace {

using test::ByteVector;
using test::ClientHelloBuilder;

struct Segment {
  std::uint32_t seq;
  ByteVector payload;
};

std::vector<Segment> segments(const ByteVector& stream, std::size_t mss) {
  std::vector<Segment> out;
  for (std::size_t pos = 0; pos < stream.size(); pos += mss) {
    const auto end = stream.begin() + static_cast<std::ptrdiff_t>(std::min(stream.size(), pos + mss));
    out.push_back({static_cast<std::uint32_t>(pos), ByteVector(stream.begin() + static_cast<std::ptrdiff_t>(pos), end)});
  }
  return out;
}

class TlsRecordStreamTest : public ::testing::Test {
 protected:
  ByteVector hello_ = ClientHelloBuilder::chrome_tcp("News.Example.org").build();
};

TEST_F(TlsRecordStreamTest, OneRecordOneSegment) {
  TlsRecordStream stream;
  const ByteVector records = test::tls_records(test::rfc8448_client_hello(), 16384);
  ASSERT_TRUE(stream.add_segment(0, records).ok());
  ASSERT_TRUE(stream.complete());
  auto hello = stream.client_hello();
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->server_name(), "server");
}

// Every split point of the first segment, including inside the 5-byte record header.
TEST_F(TlsRecordStreamTest, EverySplitOfTwoSegments) {
  const ByteVector records = test::tls_records(hello_, 16384);
  for (std::size_t split = 1; split < records.size(); ++split) {
    TlsRecordStream stream;
    ASSERT_TRUE(stream.add_segment(0, Bytes(records).first(split)).ok()) << split;
    EXPECT_FALSE(stream.complete()) << split;
    EXPECT_EQ(stream.client_hello().error(), Error::incomplete) << split;
    ASSERT_TRUE(stream.add_segment(static_cast<std::uint32_t>(split), Bytes(records).subspan(split)).ok());
    ASSERT_TRUE(stream.complete()) << split;
    auto hello = stream.client_hello();
    ASSERT_TRUE(hello.ok()) << split;
    EXPECT_EQ(hello->server_name(), "news.example.org");
  }
}

TEST_F(TlsRecordStreamTest, HelloAcrossSeveralRecordsAndReorderedSegments) {
  for (std::size_t fragment : {1u, 7u, 100u, 512u, 1000u}) {
    const ByteVector records = test::tls_records(hello_, fragment);
    auto segs = segments(records, 536);
    std::reverse(segs.begin(), segs.end());
    TlsRecordStream stream;
    for (const Segment& s : segs) ASSERT_TRUE(stream.add_segment(s.seq, s.payload).ok()) << fragment;
    ASSERT_TRUE(stream.complete()) << fragment;
    EXPECT_TRUE(std::equal(stream.handshake().begin(), stream.handshake().end(), hello_.begin(), hello_.end()));
    EXPECT_EQ(stream.client_hello()->server_name(), "news.example.org");
  }
}

TEST_F(TlsRecordStreamTest, RetransmittedOverlappingSegments) {
  const ByteVector records = test::tls_records(hello_, 700);
  TlsRecordStream stream;
  const Bytes r(records);
  ASSERT_TRUE(stream.add_segment(0, r.first(600)).ok());
  ASSERT_TRUE(stream.add_segment(400, r.subspan(400, 600)).ok());
  ASSERT_TRUE(stream.add_segment(0, r.first(600)).ok());
  ASSERT_TRUE(stream.add_segment(900, r.subspan(900)).ok());
  ASSERT_TRUE(stream.complete());
  EXPECT_TRUE(stream.client_hello().ok());
}

TEST_F(TlsRecordStreamTest, DataAfterTheHelloIsIgnored) {
  ByteVector records = test::tls_records(hello_, 16384);
  const ByteVector ccs{20, 3, 3, 0, 1, 1};
  records.insert(records.end(), ccs.begin(), ccs.end());
  TlsRecordStream stream;
  ASSERT_TRUE(stream.add_segment(0, records).ok());
  ASSERT_TRUE(stream.complete());
  EXPECT_EQ(stream.handshake().size(), hello_.size());
  EXPECT_TRUE(stream.add_segment(static_cast<std::uint32_t>(records.size()), ByteVector(3000, 23)).ok());
}

TEST_F(TlsRecordStreamTest, NonHandshakeFirstIsBadValueAndSticky) {
  TlsRecordStream stream;
  const ByteVector alert{21, 3, 1, 0, 2, 2, 40};
  auto s = stream.add_segment(0, alert);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), Error::bad_value);
  s = stream.add_segment(7, test::tls_records(hello_, 16384));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), Error::bad_value);
}

TEST_F(TlsRecordStreamTest, HttpOrSslv2IsRefused) {
  TlsRecordStream http;
  const ByteVector get{'G', 'E', 'T', ' ', '/', ' '};
  EXPECT_EQ(http.add_segment(0, get).error(), Error::bad_value);
  TlsRecordStream sslv2;
  EXPECT_EQ(sslv2.add_segment(0, ByteVector{0x80, 0x2e, 0x01, 0x00, 0x02}).error(), Error::unsupported);
}

TEST_F(TlsRecordStreamTest, BadRecordHeaders) {
  const auto error_for = [](ByteVector bytes) {
    TlsRecordStream stream;
    auto s = stream.add_segment(0, bytes);
    return s.ok() ? Error::not_found : s.error();
  };
  EXPECT_EQ(error_for({22, 2, 0, 0, 4, 1, 0, 0, 0}), Error::bad_value);  // version 2.0
  EXPECT_EQ(error_for({22, 3, 1, 0, 0}), Error::bad_value);               // empty record
  EXPECT_EQ(error_for({22, 3, 1, 0x40, 0x01}), Error::bad_length);        // 2^14 + 1
  EXPECT_EQ(error_for({22, 3, 1, 0, 4, 2, 0, 0, 0}), Error::bad_value);   // ServerHello
  // A record cut short is not an error: the rest may come.
  EXPECT_EQ(error_for({22, 3, 1, 0, 4, 1, 0}), Error::not_found);
}

TEST_F(TlsRecordStreamTest, HandshakeRecordThenAlertBeforeCompleteIsBadValue) {
  ByteVector records = test::tls_records(Bytes(hello_).first(100), 16384);
  const ByteVector alert{21, 3, 3, 0, 2, 2, 40};
  records.insert(records.end(), alert.begin(), alert.end());
  TlsRecordStream stream;
  EXPECT_EQ(stream.add_segment(0, records).error(), Error::bad_value);
}

TEST_F(TlsRecordStreamTest, HelloLongerThanTheCapIsLimitExceeded) {
  TlsRecordStream stream(1024);
  const ByteVector records = test::tls_records(hello_, 16384);  // ~1.9 KB
  EXPECT_EQ(stream.add_segment(0, Bytes(records).first(9)).error(), Error::limit_exceeded);

  // Split into small records, the header overhead fills the TCP bound first.
  const ByteVector small = test::tls_records(ClientHelloBuilder().sni("a.example").build(), 1);
  TlsRecordStream tight(small.size() - 1);
  EXPECT_EQ(tight.add_segment(0, small).error(), Error::limit_exceeded);
}

TEST_F(TlsRecordStreamTest, SegmentsPastTheCapAreClippedNotRefused) {
  TlsRecordStream stream(4096);
  const ByteVector records = test::tls_records(hello_, 16384);
  ASSERT_TRUE(stream.add_segment(5000, ByteVector(1000, 23)).ok());  // early data, far out
  ASSERT_TRUE(stream.add_segment(static_cast<std::uint32_t>(records.size()), ByteVector(4000, 23)).ok());
  ASSERT_TRUE(stream.add_segment(0, records).ok());
  ASSERT_TRUE(stream.complete());
  EXPECT_EQ(stream.client_hello()->server_name(), "news.example.org");
}

}  // namespace
}  // namespace quicstep::common
