// The WireGuard helper as the engine runs it (client/tun/wg_helper/README.md): started with
// one end of a SOCK_SEQPACKET pair as its fd 3 (IP packets) and one end of a SOCK_STREAM
// pair as its fd 4 (WireGuard's UAPI), configured over fd 4 with the wg-quick file's
// `set=1` request, watched by its PID. The engine keeps the other ends: when either side
// dies the other sees its end close.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::tun {

struct WgHelperOptions {
  std::string path;                // the qs-wg-helper executable
  std::vector<std::string> protect;  // --fwmark N, --protect-socket PATH, or --no-protect
  unsigned mtu = 1420;             // the channel's MTU (wg-quick's MTU)
  std::string log_path;            // its stderr (appended); empty: the engine's stderr
};

class WgHelperProcess {
 public:
  // Starts the helper and sends it `uapi_set` (the whole `set=1` request); waits up to 5 s
  // for its `errno=0`. Errors: what could not be started, or the helper's errno and the
  // exit status if it died.
  static common::Result<WgHelperProcess, common::Failure> start(const WgHelperOptions& options,
                                                                const std::string& uapi_set);
  WgHelperProcess(WgHelperProcess&& other) noexcept;
  WgHelperProcess& operator=(WgHelperProcess&& other) noexcept;
  ~WgHelperProcess();  // SIGTERM, then waits for it (briefly) by its PID

  // The engine's end of the packet pair (given away: the loop owns it).
  net::UniqueFd take_packets() { return std::move(packets_); }
  // One UAPI request (`get=1\n\n`, `set=1\n...\n\n`) and its whole answer, up to the
  // empty line; 5 s at most. A request begun with begin_uapi() is answered first (its
  // answer waited for and dropped).
  common::Result<std::string, common::Failure> uapi(const std::string& request);
  // The same without waiting, for a reading in the engine's loop (the channel's health):
  // begin_uapi() sends the request; poll_uapi() takes what has come, and gives the whole
  // answer once it is there (nothing yet: nullopt; the helper closed its end: a failure).
  // One request at a time: begin_uapi() while one is pending fails.
  common::Outcome begin_uapi(const std::string& request);
  std::optional<common::Result<std::string, common::Failure>> poll_uapi();
  bool uapi_pending() const { return pending_; }
  pid_t pid() const { return pid_; }

 private:
  WgHelperProcess() = default;
  void terminate();
  common::Result<std::string, common::Failure> read_answer(int timeout_ms);  // pending's
  // The helper closed its UAPI end: why (its exit status, if it ended within `wait_ms`).
  common::Failure closed_failure(int wait_ms);
  pid_t pid_ = -1;
  net::UniqueFd packets_;
  net::UniqueFd uapi_;
  bool pending_ = false;  // begin_uapi() sent a request whose answer is not all read
  std::string partial_;   // what came of it so far
};

}  // namespace quicstep::client::tun
