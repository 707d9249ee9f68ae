// StateWatch: the kernel's announcements of changes to the state the daemon owns, so that
// self-healing (client/kernel/healer.hpp) checks at once instead of at its next periodic
// check: rtnetlink's rule groups (RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE), route groups (a
// deleted route; a new default route), address groups (an address added or removed: the
// native source may follow), link group (a device down or up, gone or new) and tc group (a
// filter removed); nfnetlink's NFNLGRP_NFTABLES (a table, chain or rule deleted).
// Announcements of set elements (the daemon's own flow sets) and of other additions wake
// nothing. Control plane.
#pragma once

#include "common/error.hpp"

struct mnl_socket;

namespace quicstep::client::kernel {

class StateWatch {
 public:
  StateWatch() = default;
  StateWatch(const StateWatch&) = delete;
  StateWatch& operator=(const StateWatch&) = delete;
  ~StateWatch();

  // Subscribes on both buses. Failures: a socket's, a subscription's.
  common::Outcome open();
  // Non-blocking; readable when announcements are queued.
  int route_fd() const;
  int nft_fd() const;
  // Read what is queued on either. Return whether something the daemon owns may have been
  // removed or changed (or announcements were lost: then assume so).
  bool drain_route();
  bool drain_nft();

 private:
  mnl_socket* route_ = nullptr;
  mnl_socket* nft_ = nullptr;
};

}  // namespace quicstep::client::kernel
