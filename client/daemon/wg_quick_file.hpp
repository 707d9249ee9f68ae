// A wg-quick file as quicstepd uses it (client/README.md, "Install on a desktop"): the
// lines `wg setconf` takes, and the [Interface] keys that only wg-quick knows, which the
// daemon applies itself (Address, MTU) or uses otherwise (DNS: where the channel's DNS
// queries go, client/README.md "DNS through the channel"); Table and the hooks are dropped.
// As wg-quick reads them: its own keys case-sensitive and only in [Interface], a `#` comment
// to the end of the line, spaces around `=` and list items, CRLF or LF. Sans-IO: the caller
// reads the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace quicstep::client::daemon {

struct WgQuickFile {
  std::string wg_text;                 // every other line, as written (for `wg setconf`)
  std::vector<std::string> addresses;  // Address items, in order ("10.0.0.2/32")
  std::string mtu;                     // MTU's value; empty: none
  // DNS items that are addresses, by family, in order (canonical text); the items that are
  // names (search domains) are not used by the daemon.
  std::vector<std::string> dns_v4, dns_v6;
};

WgQuickFile split_wg_quick(std::string_view text);

}  // namespace quicstep::client::daemon
