// run_process: runs a program (no shell) with optional stdin text, waits for it, and
// returns its exit status and output. For the control plane only (nft, ip, iptables,
// wireguard-go): it blocks the caller for the program's lifetime.
#pragma once

#include <string>
#include <vector>

namespace quicstep::net {

struct ProcessResult {
  int status = -1;     // exit code; -1 when it could not be started or was killed
  std::string output;  // stdout and stderr, interleaved, at most 64 KiB
  bool ok() const { return status == 0; }
};

// argv[0] is looked up in PATH. Errors are in the result (status -1, output says why);
// never throws.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text = {});

// "argv joined by spaces: output" for logs.
std::string describe(const std::vector<std::string>& argv, const ProcessResult& r);

}  // namespace quicstep::net
