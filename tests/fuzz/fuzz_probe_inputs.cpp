// quicstep-probe's untrusted inputs: target-list lines (Tranco "rank,domain" or plain names),
// --static-hosts text, and DNS answers from the resolver. The first input byte picks the
// part: 0-84 target lines, 85-169 static hosts, 170-255 a DNS answer. Beyond "no crash":
// a target's domain is a valid, lower-case name without a final dot; every static host is
// a valid name with canonical addresses; a parsed answer's status agrees with its
// addresses, which are canonical addresses of the family asked; a query built for a valid
// name parses back as that question.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "common/dns_message.hpp"
#include "measurement/probe/dns_answer.hpp"
#include "measurement/probe/static_hosts.hpp"
#include "measurement/probe/target_input.hpp"

namespace {

namespace probe = quicstep::measurement::probe;

bool canonical_address(const std::string& text, int family) {
  unsigned char raw[16];
  if (inet_pton(family, text.c_str(), raw) != 1) return false;
  char back[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, raw, back, sizeof(back));
  return text == back;
}

void check_target(const probe::Target& t) {
  if (!probe::is_valid_domain(t.domain)) __builtin_trap();
  for (char c : t.domain) {
    if (c >= 'A' && c <= 'Z') __builtin_trap();
  }
  if (t.domain.back() == '.') __builtin_trap();
  const auto names = probe::names_to_probe(t.domain, true);
  if (names.empty() || names.size() > 2 || names.front() != t.domain) __builtin_trap();
}

void target_lines(std::string_view text) {
  // Line by line, as the parser is called on its own...
  std::size_t number = 0, targets = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const auto line = text.substr(start, end - start);
    const auto parsed = probe::parse_target_line(line, ++number);
    if (parsed.kind == probe::LineKind::target) {
      check_target(parsed.target);
      if (parsed.target.input_line != number) __builtin_trap();
      ++targets;
    } else if (parsed.kind == probe::LineKind::bad && parsed.reason.empty()) {
      __builtin_trap();
    }
    start = end + 1;
  }
  // ...and through the reader, which must not find more targets than there are lines.
  std::istringstream in{std::string(text)};
  probe::TargetReader reader(in);
  std::size_t read_targets = 0;
  while (auto p = reader.next()) {
    if (p->kind == probe::LineKind::skip) __builtin_trap();  // skipped silently
    if (p->kind == probe::LineKind::target) {
      check_target(p->target);
      if (p->target.input_line == 0 || p->target.input_line > number) __builtin_trap();
      ++read_targets;
    }
  }
  if (read_targets > targets) __builtin_trap();
}

void static_hosts(std::string_view text) {
  probe::StaticHosts hosts;
  if (auto parsed = probe::parse_static_hosts(text, "fuzz", &hosts); !parsed) {
    if (parsed.error().message.rfind("fuzz:", 0) != 0) __builtin_trap();
    return;
  }
  for (const auto& [name, entry] : hosts) {
    if (!probe::is_valid_domain(name)) __builtin_trap();
    if (entry.a.empty() && entry.aaaa.empty()) __builtin_trap();
    for (const auto& ip : entry.a) {
      if (!canonical_address(ip, AF_INET)) __builtin_trap();
    }
    for (const auto& ip : entry.aaaa) {
      if (!canonical_address(ip, AF_INET6)) __builtin_trap();
    }
  }
}

// The answer is matched against the question it carries when that question is readable
// (so the fuzzer reaches the answer section), else against a fixed one.
void dns_answer(const std::uint8_t* data, std::size_t size) {
  const quicstep::common::Bytes message(data, size);
  std::uint16_t id = size >= 2 ? static_cast<std::uint16_t>(data[0] << 8 | data[1]) : 0;
  std::string name = "a.test";
  std::uint16_t qtype = quicstep::common::dns_type::kA;
  if (auto parsed = quicstep::common::parse_dns_message(message);
      parsed && !parsed->questions.empty()) {
    name = parsed->questions.front().name;
    qtype = parsed->questions.front().qtype;
  }
  const std::uint16_t types[] = {qtype, quicstep::common::dns_type::kA,
                                 quicstep::common::dns_type::kAaaa};
  for (std::uint16_t t : types) {
    auto answer = probe::parse_address_answer(message, id, name, t);
    if (!answer) continue;
    const bool ok = answer->status == probe::DnsStatus::ok;
    if (ok != !answer->addresses.empty()) __builtin_trap();
    if (answer->status == probe::DnsStatus::timeout) __builtin_trap();
    const int family = t == quicstep::common::dns_type::kA ? AF_INET : AF_INET6;
    for (const auto& ip : answer->addresses) {
      if (!canonical_address(ip, family)) __builtin_trap();
    }
  }
  // A query for a name the target parser accepts encodes and parses back as that question.
  if (probe::is_valid_domain(name)) {
    auto query = probe::build_address_query(id, name, qtype);
    if (!query) __builtin_trap();
    auto back = quicstep::common::parse_dns_message(*query);
    if (!back || back->header.id != id || back->questions.size() != 1 ||
        back->questions.front().name != name || back->questions.front().qtype != qtype) {
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t part = data[0];
  ++data;
  --size;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (part < 85) {
    target_lines(text);
  } else if (part < 170) {
    static_hosts(text);
  } else {
    dns_answer(data, size);
  }
  return 0;
}
