#include "measurement/probe/target_input.hpp"

#include <charconv>

namespace quicstep::measurement::probe {

namespace {

constexpr std::size_t kMaxLineLength = 4096;
constexpr std::size_t kMaxDomainLength = 253;
constexpr std::size_t kMaxLabelLength = 63;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' ||
                        s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMaxQuoted = 80;
  std::string out = "`";
  out.append(s.substr(0, kMaxQuoted));
  if (s.size() > kMaxQuoted) out += "...";
  return out + "'";
}

ParsedLine bad(std::string reason) {
  ParsedLine p;
  p.kind = LineKind::bad;
  p.reason = std::move(reason);
  return p;
}

}  // namespace

common::Outcome is_valid_domain(std::string_view name) {
  auto fail = [](std::string why) { return common::Failure(std::move(why)); };
  if (name.empty()) return fail("empty domain name");
  if (name.size() > kMaxDomainLength) return fail("domain name over 253 characters");
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t dot = name.find('.', start);
    const std::size_t end = dot == std::string_view::npos ? name.size() : dot;
    const std::string_view label = name.substr(start, end - start);
    if (label.empty()) return fail("empty label in domain name " + quoted(name));
    if (label.size() > kMaxLabelLength) return fail("label over 63 characters in " + quoted(name));
    if (label.front() == '-' || label.back() == '-') {
      return fail("label starts or ends with '-' in " + quoted(name));
    }
    for (char c : label) {
      const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      if (!label_char(lower)) return fail("invalid character in domain name " + quoted(name));
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return {};
}

ParsedLine parse_target_line(std::string_view line, std::size_t line_number) {
  line = trim(line);
  if (line.empty() || line.front() == '#') return {};
  if (line.size() > kMaxLineLength) return bad("line over 4096 characters");
  std::optional<std::uint64_t> rank;
  std::string_view domain = line;
  if (const std::size_t comma = line.find(','); comma != std::string_view::npos) {
    const std::string_view rank_text = trim(line.substr(0, comma));
    domain = trim(line.substr(comma + 1));
    if (domain.find(',') != std::string_view::npos) {
      return bad("more than two fields (expected `rank,domain'): " + quoted(line));
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(),
                                           value);
    if (ec != std::errc() || end != rank_text.data() + rank_text.size() || value == 0) {
      return bad("rank is not a positive integer: " + quoted(rank_text));
    }
    rank = value;
  }
  if (!domain.empty() && domain.back() == '.') domain.remove_suffix(1);
  if (auto valid = is_valid_domain(domain); !valid) return bad(valid.error().message);
  ParsedLine p;
  p.kind = LineKind::target;
  p.target.input_line = line_number;
  p.target.rank = rank;
  p.target.domain.reserve(domain.size());
  for (char c : domain) {
    p.target.domain += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return p;
}

std::vector<std::string> names_to_probe(const std::string& domain, bool with_www) {
  std::vector<std::string> names{domain};
  if (with_www && domain.rfind("www.", 0) != 0 && domain.size() + 4 <= kMaxDomainLength) {
    names.push_back("www." + domain);
  }
  return names;
}

std::optional<ParsedLine> TargetReader::next() {
  std::string line;
  while (std::getline(in_, line)) {
    ++line_number_;
    ParsedLine p = parse_target_line(line, line_number_);
    if (p.kind == LineKind::skip) continue;
    p.target.input_line = line_number_;
    return p;
  }
  return std::nullopt;
}

}  // namespace quicstep::measurement::probe
