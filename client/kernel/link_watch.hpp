// LinkWatch: the kernel's announcements of network devices that appear or change
// (rtnetlink's RTMGRP_LINK group). The daemon re-checks its channel device and, on the routed
// native path, attaches the guard to a new device as soon as the kernel announces it, rather
// than at its next periodic check (every 2 s; kept as the fallback). Control plane.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.hpp"

struct mnl_socket;

namespace quicstep::client::kernel {

// Whether device `name` exists and is administratively up (IFF_UP).
bool link_is_up(const std::string& name);

class LinkWatch {
 public:
  LinkWatch() = default;
  LinkWatch(const LinkWatch&) = delete;
  LinkWatch& operator=(const LinkWatch&) = delete;
  ~LinkWatch();

  // Subscribes. Failures: the socket's, the subscription's.
  common::Outcome open();
  // Non-blocking; readable when announcements are queued.
  int fd() const;
  // Reads what is queued. Returns whether a device appeared or changed (or announcements
  // were lost: then assume so).
  bool drain();

 private:
  mnl_socket* socket_ = nullptr;
};

}  // namespace quicstep::client::kernel
