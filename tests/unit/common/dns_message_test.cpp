#include "common/dns_message.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/packet_builder.hpp"

namespace quicstep::common {
namespace {

using test::from_hex;
using ByteVec = std::vector<std::uint8_t>;

// DNS payloads of real queries from `dig` (9.18), captured with tcpdump in throwaway
// namespaces; the whole packets are in ip_packet_test.cpp.
// `dig open.test A`: id 0x0b10, RD and AD set, one question, an OPT record with a cookie.
const char* const kDigOpenTestA =
    "0b10 0120 0001 0000 0000 0001 046f 7065 6e04 7465 7374 0000 0100 0100 0029 04d0"
    "0000 0000 000c 000a 0008 f0d0 da9d d672 cf69";
// `dig WWW.Open.Test AAAA` over IPv6 (mixed case, as typed).
const char* const kDigWwwOpenTestAaaa =
    "ff48 0120 0001 0000 0000 0001 0357 5757 044f 7065 6e04 5465 7374 0000 1c00 0100"
    "0029 04d0 0000 0000 000c 000a 0008 447a 9f5d be5a e430";
// `dig +noedns blocked.test HTTPS`: no additional records.
const char* const kDigBlockedTestHttps =
    "0418 0120 0001 0000 0000 0000 0762 6c6f 636b 6564 0474 6573 7400 0041 0001";
// `dig +tcp +noedns open.test A`: the TCP payload, with its 2-byte length prefix.
const char* const kDigTcpOpenTestA =
    "001b ec5b 0120 0001 0000 0000 0000 046f 7065 6e04 7465 7374 0000 0100 01";

// A header with `qdcount` questions, then `rest`.
ByteVec message(std::uint16_t qdcount, const ByteVec& rest) {
  ByteVec m = {0x12,
               0x34,
               0x01,
               0x00,
               static_cast<std::uint8_t>(qdcount >> 8),
               static_cast<std::uint8_t>(qdcount),
               0,
               0,
               0,
               0,
               0,
               0};
  m.insert(m.end(), rest.begin(), rest.end());
  return m;
}

ByteVec cat(std::initializer_list<ByteVec> parts) {
  ByteVec out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

ByteVec label(std::size_t n, char c = 'a') {
  ByteVec l{static_cast<std::uint8_t>(n)};
  l.insert(l.end(), n, static_cast<std::uint8_t>(c));
  return l;
}

const ByteVec kTypeA = {0, 1, 0, 1};

TEST(DnsMessage, ParsesCapturedDigQuery) {
  auto m = parse_dns_message(from_hex(kDigOpenTestA));
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  EXPECT_EQ(m->header.id, 2832);
  EXPECT_FALSE(m->header.qr);
  EXPECT_EQ(m->header.opcode, 0);
  EXPECT_TRUE(m->header.rd);
  EXPECT_TRUE(m->header.ad);
  EXPECT_FALSE(m->header.aa || m->header.tc || m->header.ra || m->header.cd);
  EXPECT_EQ(m->header.rcode, 0);
  EXPECT_EQ(m->header.qdcount, 1);
  EXPECT_EQ(m->header.ancount, 0);
  EXPECT_EQ(m->header.nscount, 0);
  EXPECT_EQ(m->header.arcount, 1);
  ASSERT_EQ(m->questions.size(), 1u);
  EXPECT_EQ(m->questions[0].name, "open.test");
  EXPECT_EQ(m->questions[0].qtype, dns_type::kA);
  EXPECT_EQ(m->questions[0].qclass, kDnsClassIn);
}

TEST(DnsMessage, LowerCasesNames) {
  auto m = parse_dns_message(from_hex(kDigWwwOpenTestAaaa));
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->questions.size(), 1u);
  EXPECT_EQ(m->questions[0].name, "www.open.test");
  EXPECT_EQ(m->questions[0].qtype, dns_type::kAaaa);
}

TEST(DnsMessage, EncoderReproducesDigBytes) {
  DnsMessage q = make_dns_query(0x0418, "blocked.test", dns_type::kHttps);
  q.header.ad = true;  // dig sets AD in queries
  ByteWriter w;
  ASSERT_TRUE(encode_dns_message(w, q).ok());
  EXPECT_EQ(w.take(), from_hex(kDigBlockedTestHttps));

  DnsMessage t = make_dns_query(0xec5b, "open.test", dns_type::kA);
  t.header.ad = true;
  ByteWriter tw;
  ASSERT_TRUE(encode_dns_tcp_message(tw, t).ok());
  EXPECT_EQ(tw.take(), from_hex(kDigTcpOpenTestA));
}

TEST(DnsMessage, RoundTrips) {
  const std::string names[] = {
      "open.test",
      ".",
      "a",
      "xn--bcher-kva.example",
      "with\\.dot.and\\\\backslash.test",
      "bytes\\000\\255\\032.test",
      std::string(63, 'x') + ".test",
      // 255 bytes in wire form: 3 labels of 63, one of 61, and the root.
      std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
          std::string(61, 'd'),
  };
  for (const std::string& name : names) {
    DnsMessage in = make_dns_query(0xbeef, name, dns_type::kHttps);
    in.questions.push_back(DnsQuestion{"second.test", dns_type::kTxt, 3});
    in.header.cd = true;
    in.header.opcode = 2;
    ByteWriter w;
    ASSERT_TRUE(encode_dns_message(w, in).ok()) << name;
    const ByteVec bytes = w.take();
    auto out = parse_dns_message(bytes);
    ASSERT_TRUE(out.ok()) << name << ": " << to_string(out.error());
    EXPECT_EQ(out->header.id, 0xbeef);
    EXPECT_TRUE(out->header.rd);
    EXPECT_TRUE(out->header.cd);
    EXPECT_EQ(out->header.opcode, 2);
    EXPECT_EQ(out->header.qdcount, 2);
    ASSERT_EQ(out->questions.size(), 2u);
    EXPECT_EQ(out->questions[0].name, name);
    EXPECT_EQ(out->questions[0].qtype, dns_type::kHttps);
    EXPECT_EQ(out->questions[1].name, "second.test");
    EXPECT_EQ(out->questions[1].qclass, 3);
  }
}

TEST(DnsMessage, EncoderAcceptsTextVariants) {
  const std::pair<std::string, std::string> cases[] = {
      {"Open.Test.", "open.test"},  // final dot; upper case survives encoding, not parsing
      {"", "."},
      {"\\065bc.test", "abc.test"},  // \065 is 'A'
  };
  for (const auto& [text, parsed] : cases) {
    DnsMessage in = make_dns_query(1, text, dns_type::kA);
    ByteWriter w;
    ASSERT_TRUE(encode_dns_message(w, in).ok()) << text;
    auto out = parse_dns_message(w.take());
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->questions.at(0).name, parsed);
  }
}

TEST(DnsMessage, EncoderRejectsBadNames) {
  const std::pair<std::string, Error> cases[] = {
      {"a..b", Error::bad_value},
      {".a", Error::bad_value},
      {"a.b..", Error::bad_value},
      {std::string(64, 'x') + ".test", Error::bad_value},
      {"bad\\12", Error::bad_value},
      {"bad\\256", Error::bad_value},
      {"trailing\\", Error::bad_value},
      // 256 bytes in wire form.
      {std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
           std::string(62, 'd'),
       Error::limit_exceeded},
  };
  for (const auto& [name, error] : cases) {
    ByteWriter w;
    auto s = write_dns_name(w, name);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_EQ(s.error(), error) << name;
  }
}

TEST(DnsMessage, EveryTruncationIsATypedError) {
  for (const char* hex : {kDigOpenTestA, kDigWwwOpenTestAaaa, kDigBlockedTestHttps}) {
    const ByteVec msg = from_hex(hex);
    // Where the question section ends; the records after it are not parsed.
    std::size_t end = 12;
    while (msg[end] != 0) end += msg[end] + 1;
    end += 1 + 4;
    for (std::size_t n = 0; n < msg.size(); ++n) {
      auto m = parse_dns_message(Bytes(msg).first(n));
      if (n < end) {
        ASSERT_FALSE(m.ok()) << "prefix " << n;
        EXPECT_EQ(m.error(), Error::truncated) << "prefix " << n;
      } else {
        EXPECT_TRUE(m.ok()) << "prefix " << n;
      }
    }
  }
}

TEST(DnsMessage, FollowsCompressionPointers) {
  // Question 1: open.test at offset 12. Question 2: "www" then a pointer to offset 12.
  // Question 3: a bare pointer to question 2's name (offset 27).
  const ByteVec msg = message(3, cat({label(4, 'o'),
                                      label(4, 't'),
                                      {0},
                                      kTypeA,  //
                                      label(3, 'w'),
                                      {0xc0, 12},
                                      kTypeA,  //
                                      {0xc0, 27},
                                      {0, 28, 0, 1}}));
  auto m = parse_dns_message(msg);
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  ASSERT_EQ(m->questions.size(), 3u);
  EXPECT_EQ(m->questions[0].name, "oooo.tttt");
  EXPECT_EQ(m->questions[1].name, "www.oooo.tttt");
  EXPECT_EQ(m->questions[2].name, "www.oooo.tttt");
  EXPECT_EQ(m->questions[2].qtype, dns_type::kAaaa);

  // The reader ends after the first pointer, not after the name it points to.
  ByteReader r(msg);
  ASSERT_TRUE(r.skip(27).ok());
  auto name = read_dns_name(r);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(r.position(), 27u + 4 + 2);
}

TEST(DnsMessage, RejectsPointerLoops) {
  struct Case {
    const char* what;
    ByteVec msg;
    Error error;
  };
  const Case cases[] = {
      {"pointer to itself", message(1, cat({{0xc0, 12}, kTypeA})), Error::bad_value},
      {"pointer forwards", message(1, cat({{0xc0, 14}, {0}, kTypeA})), Error::bad_value},
      // Offset 12: "a", then a pointer to offset 12 again: back into its own run of labels.
      {"loop through a label", message(1, cat({label(1), {0xc0, 12}, kTypeA})), Error::bad_value},
      // Question 2 points back to question 1, whose pointer leads forward to question 2.
      {"two-name loop",
       message(2, cat({label(1), {0xc0, 20}, kTypeA, label(1), {0xc0, 12}, kTypeA})),
       Error::bad_value},
      {"pointer cut short", message(1, {0xc0}), Error::truncated},
      {"pointer past the end", message(1, cat({{0xff, 0xff}, kTypeA})), Error::bad_value},
  };
  for (const Case& c : cases) {
    auto m = parse_dns_message(c.msg);
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.error(), c.error) << c.what << ": " << to_string(m.error());
  }
}

TEST(DnsMessage, BoundsPointerHops) {
  // Offset 12: the root; then pointers, each to the one before. A name that starts at the
  // last pointer follows every one of them.
  for (const std::size_t pointers : {kDnsMaxPointerHops, kDnsMaxPointerHops + 1}) {
    ByteVec body{0};
    for (std::size_t i = 0; i < pointers; ++i) {
      const std::size_t target = i == 0 ? 12 : 13 + 2 * (i - 1);
      body.push_back(static_cast<std::uint8_t>(0xc0 | (target >> 8)));
      body.push_back(static_cast<std::uint8_t>(target & 0xff));
    }
    const ByteVec msg = message(0, body);
    ByteReader r(msg);
    ASSERT_TRUE(r.skip(msg.size() - 2).ok());
    auto name = read_dns_name(r);
    if (pointers <= kDnsMaxPointerHops) {
      ASSERT_TRUE(name.ok()) << pointers;
      EXPECT_EQ(*name, ".");
    } else {
      ASSERT_FALSE(name.ok());
      EXPECT_EQ(name.error(), Error::limit_exceeded);
      EXPECT_EQ(r.position(), msg.size() - 2);  // consumed nothing
    }
  }
}

TEST(DnsMessage, RejectsBadLabelsAndLongNames) {
  struct Case {
    const char* what;
    ByteVec msg;
    Error error;
  };
  const ByteVec long_name = cat({label(63), label(63), label(63)});  // 192 bytes, no end
  const Case cases[] = {
      {"label type 0x40 (64 bytes)", message(1, cat({label(64), {0}, kTypeA})), Error::bad_value},
      {"label type 0x80", message(1, cat({{0x80, 'a', 0}, kTypeA})), Error::bad_value},
      {"256-byte name", message(1, cat({long_name, label(62), {0}, kTypeA})),
       Error::limit_exceeded},
      {"long through a pointer",
       message(2, cat({long_name, {0}, kTypeA, label(63), {0xc0, 12}, kTypeA})),
       Error::limit_exceeded},
      {"label past the end", message(1, {5, 'a', 'b'}), Error::truncated},
      {"no type", message(1, {0, 0, 1}), Error::truncated},
      {"too many questions", message(kDnsMaxQuestions + 1, {}), Error::limit_exceeded},
      {"header only", ByteVec(11, 0), Error::truncated},
  };
  for (const Case& c : cases) {
    auto m = parse_dns_message(c.msg);
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.error(), c.error) << c.what << ": " << to_string(m.error());
  }
  // The longest legal name: 255 bytes in wire form.
  auto m = parse_dns_message(message(1, cat({long_name, label(61), {0}, kTypeA})));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->questions.at(0).name.size(), 253u);
}

TEST(DnsMessage, EscapesAmbiguousLabelBytes) {
  // One label "a.b" must not read as the two labels "a" and "b".
  auto m = parse_dns_message(message(1, cat({{3, 'a', '.', 'b', 1, 0x07, 1, ' ', 0}, kTypeA})));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->questions.at(0).name, "a\\.b.\\007.\\032");
}

TEST(DnsMessage, TcpFraming) {
  const ByteVec stream = cat({from_hex(kDigTcpOpenTestA), from_hex(kDigTcpOpenTestA)});
  auto f = parse_dns_tcp_frame(stream);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->message.size(), 27u);
  EXPECT_EQ(f->frame_length, 29u);
  auto m = parse_dns_message(f->message);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.id, 0xec5b);
  EXPECT_EQ(m->questions.at(0).name, "open.test");
  auto second = parse_dns_tcp_frame(Bytes(stream).subspan(f->frame_length));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->frame_length, 29u);

  for (std::size_t n = 0; n < 29; ++n) {
    auto partial = parse_dns_tcp_frame(Bytes(stream).first(n));
    ASSERT_FALSE(partial.ok()) << n;
    EXPECT_EQ(partial.error(), Error::incomplete) << n;
  }
  auto tiny = parse_dns_tcp_frame(ByteVec{0x00, 0x0b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.error(), Error::bad_length);
}

}  // namespace
}  // namespace quicstep::common
