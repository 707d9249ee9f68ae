// Targets for quicstep-probe: lines of a Tranco list ("rank,domain") or of a plain list
// ("domain"), read lazily so a million-line list never sits in memory. Blank lines and
// "#" comments are skipped; a bad line yields its number and the reason, never a target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace quicstep::measurement::probe {

struct Target {
  std::size_t input_line = 0;          // 1-based line number in the input
  std::optional<std::uint64_t> rank;   // Tranco rank when the line had one
  std::string domain;                  // lower case, no final dot
};

enum class LineKind { skip, target, bad };

struct ParsedLine {
  LineKind kind = LineKind::skip;
  Target target;       // kind == target
  std::string reason;  // kind == bad: what is wrong, quoting the bad value
};

// One input line (without its newline; a trailing '\r' and surrounding blanks are ignored).
ParsedLine parse_target_line(std::string_view line, std::size_t line_number);

// Whether `name` is a DNS host name this prober accepts: 1..253 characters, labels of
// 1..63 characters from [a-z0-9_-] (upper case accepted), no label starting or ending with
// '-'. The failure says why not, quoting the name.
common::Outcome is_valid_domain(std::string_view name);

// The names probed for a domain: the apex and "www.<apex>" (unless with_www is false or the
// domain already starts with "www.").
std::vector<std::string> names_to_probe(const std::string& domain, bool with_www);

// Reads lines on demand; next() returns the next target or bad line (skipped lines are
// consumed silently), nullopt at the end of the stream. Lines over 4096 bytes are bad.
class TargetReader {
 public:
  explicit TargetReader(std::istream& in) : in_(in) {}
  std::optional<ParsedLine> next();

 private:
  std::istream& in_;
  std::size_t line_number_ = 0;
};

}  // namespace quicstep::measurement::probe
