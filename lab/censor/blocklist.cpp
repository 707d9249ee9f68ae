#include "lab/censor/blocklist.hpp"

#include <array>
#include <fstream>
#include <sstream>

namespace quicstep::censor {
namespace {

constexpr std::size_t kMaxName = 253;
constexpr std::size_t kMaxLabel = 63;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

bool name_byte_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Lower-cases and checks a dotted name (no final dot); an error text or nullopt.
std::optional<std::string> normalize(std::string_view name, std::string& out) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty()) return "empty name";
  if (name.size() > kMaxName) return "name over 253 bytes";
  out.clear();
  std::size_t label = 0;
  for (char c : name) {
    c = lower(c);
    if (c == '.') {
      if (label == 0) return "empty label";
      label = 0;
    } else {
      if (!name_byte_ok(c)) return std::string("byte `") + c + "' not allowed in a name";
      if (++label > kMaxLabel) return "label over 63 bytes";
    }
    out.push_back(c);
  }
  if (label == 0) return "empty label";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> Blocklist::add(std::string_view rule) {
  if (auto hash = rule.find('#'); hash != std::string_view::npos) rule = rule.substr(0, hash);
  rule = trim(rule);
  if (rule.empty()) return std::nullopt;
  Set* set = &exact_;
  std::string_view name = rule;
  if (name.starts_with("*.")) {
    set = &subdomains_;
    name.remove_prefix(2);
  } else if (name.starts_with(".")) {
    set = &with_subdomains_;
    name.remove_prefix(1);
  }
  std::string normal;
  if (auto why = normalize(name, normal)) return "`" + std::string(rule) + "': " + *why;
  set->insert(std::move(normal));
  return std::nullopt;
}

std::vector<BlocklistProblem> Blocklist::load(std::string_view text) {
  std::vector<BlocklistProblem> problems;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (auto why = add(line)) {
      problems.push_back({line_no, "line " + std::to_string(line_no) + ": " + *why});
    }
  }
  return problems;
}

std::optional<BlocklistMatch> Blocklist::match(std::string_view name) const {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || name.size() > kMaxName) return std::nullopt;
  std::array<char, kMaxName> buf{};
  for (std::size_t i = 0; i < name.size(); ++i) buf[i] = lower(name[i]);
  const std::string_view n(buf.data(), name.size());
  if (exact_.find(n) != exact_.end()) return BlocklistMatch{std::string(n)};
  if (with_subdomains_.find(n) != with_subdomains_.end()) return BlocklistMatch{"." + std::string(n)};
  // Suffixes after each dot, longest first.
  for (std::size_t dot = n.find('.'); dot != std::string_view::npos; dot = n.find('.', dot + 1)) {
    const std::string_view suffix = n.substr(dot + 1);
    if (subdomains_.find(suffix) != subdomains_.end()) return BlocklistMatch{"*." + std::string(suffix)};
    if (with_subdomains_.find(suffix) != with_subdomains_.end()) {
      return BlocklistMatch{"." + std::string(suffix)};
    }
  }
  return std::nullopt;
}

std::vector<BlocklistProblem> load_blocklist_file(const std::string& path, Blocklist& into) {
  std::ifstream in(path);
  if (!in) return {{0, path + ": cannot read the blocklist file"}};
  std::stringstream text;
  text << in.rdbuf();
  auto problems = into.load(text.str());
  for (auto& p : problems) p.message = path + ":" + p.message.substr(5);  // "line N: " -> "path:N: "
  return problems;
}

}  // namespace quicstep::censor
