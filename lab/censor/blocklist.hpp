// Blocklist: the censor's domain rules, read from a text file (one rule a line).
//
//   blocked.test      the exact name only
//   *.blocked.test    any name under blocked.test (www.blocked.test, a.b.blocked.test),
//                     not blocked.test itself
//   .blocked.test     blocked.test and any name under it
//   # comment         blank lines and text after '#' are ignored
//
// Names are compared case-insensitively, without a final dot. A bad line (an empty
// label, a label over 63 bytes, a name over 253, a byte outside [a-z0-9-_]) is reported with
// its line number and the quoted text, and skipped: the rest of the file still loads.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace quicstep::censor {

struct BlocklistProblem {
  std::size_t line = 0;  // 1-based
  std::string message;   // "line 3: `a..b': empty label"
};

// A rule that matched, for the decision log.
struct BlocklistMatch {
  std::string rule;  // as written in the file: "*.blocked.test"
};

class Blocklist {
 public:
  // Adds one rule in the file syntax above. Returns an error text (without line number)
  // for a bad rule, nullopt on success; a comment or blank rule adds nothing.
  std::optional<std::string> add(std::string_view rule);

  // Parses a whole file's text; every bad line is reported, the others are added.
  std::vector<BlocklistProblem> load(std::string_view text);

  // The rule matching `name` (an SNI or a DNS question name), or nullopt. `name` may have
  // a final dot and upper-case letters. Exact rules win over suffix rules; among suffix
  // rules, the longest (most specific) suffix wins. No allocation for names up to 253 bytes.
  std::optional<BlocklistMatch> match(std::string_view name) const;

  std::size_t size() const { return exact_.size() + subdomains_.size() + with_subdomains_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Set = std::unordered_set<std::string, Hash, std::equal_to<>>;
  Set exact_;            // "blocked.test"
  Set subdomains_;       // "*.blocked.test" stored as "blocked.test"
  Set with_subdomains_;  // ".blocked.test" stored as "blocked.test"
};

// Reads a blocklist file. Returns the problems of bad lines ("FILE:3: `a..b': empty label");
// an unreadable file is one problem with line 0.
std::vector<BlocklistProblem> load_blocklist_file(const std::string& path, Blocklist& into);

}  // namespace quicstep::censor
