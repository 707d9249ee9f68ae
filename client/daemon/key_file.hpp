// Files that hold a WireGuard private key: the check wg-quick makes before it reads one, and
// the private copy handed to `wg setconf`.
#pragma once

#include <optional>
#include <string>

#include "common/error.hpp"

namespace quicstep::client::daemon {

// A warning for a person when `path` can be read by users other than its owner and group,
// as wg-quick gives it ("Warning: `F' is world accessible"): the file's mode grants others
// any access, and so does its folder's (a file in a closed folder is not reachable). Nothing
// when the file is private, or cannot be examined (the read that follows says why).
std::optional<std::string> world_accessible_warning(const std::string& path);

// Writes `text` to a new file at `path` that only its owner may read or write, from its very
// first byte: an existing file or symbolic link at `path` is removed first, and the file is
// created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, whatever the umask. Errors: the
// folder's, the creation's or the write's, with the system's reason; on error nothing is
// left at `path`.
common::Outcome write_private_file(const std::string& path, const std::string& text);

}  // namespace quicstep::client::daemon
