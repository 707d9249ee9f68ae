// The one-descriptor exchange of docs/DESIGN.md "Processes and the protocols between them",
// the C++ side of client/android's FdProtocol and of qs-wg-helper's protect.go: the sender
// connects to a unix stream socket, writes one data byte (0) carrying one descriptor by
// SCM_RIGHTS, and reads one byte back: 0 = taken (or protected), anything else = refused.
// One connection per descriptor. Two uses:
//   TUN fd   the Android service sends the VpnService TUN to the engine (engine listens)
//   protect  the engine sends each relay socket to the service, which calls
//            VpnService.protect(fd) (shadowsocks-android's protect_path; service listens)
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/error.hpp"
#include "net/unique_fd.hpp"

namespace quicstep::client::tun {

// A listening unix stream socket at `path` (an old socket file there is replaced), mode
// 0600 by umask while it is bound, close-on-exec. Errors: the path and the system's reason.
common::Result<net::UniqueFd, common::Failure> listen_unix(const std::string& path);

// Sends `fd` to the listener at `path` and waits up to `timeout` for its answer. Errors:
// which step failed ("connect protect.sock: No such file or directory", "... refused the
// descriptor (answer 1)", "... closed without an answer").
common::Outcome send_fd(const std::string& path, int fd, std::chrono::milliseconds timeout);

// Waits on `listener` for senders until one sends exactly one descriptor, answers it 0 and
// returns it (close-on-exec). A sender that sends no descriptor, or more than one, is
// answered 1 (its descriptors closed) and the wait goes on; so is one that says nothing
// within `per_sender`. `keep_waiting` is asked every 200 ms; when it says no, the wait ends
// with the Failure "stopped". Other errors: the system's reason for accept or poll.
common::Result<net::UniqueFd, common::Failure> receive_fd(
    int listener, std::chrono::milliseconds per_sender, const std::function<bool()>& keep_waiting);

}  // namespace quicstep::client::tun
