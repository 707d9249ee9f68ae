// tun_fast_path_shared.h: what the TUN's fast path (tun_fast_path.bpf.c) and its loader
// (client/tun/linux/tun_fast_path.cpp) agree on. Plain C, fixed-width kernel types, no
// padding surprises.
#pragma once

#include <linux/types.h>

// A moved flow as the application sent it into the TUN: its own address and port, the
// server's. Addresses as IPv6 (IPv4 mapped, ::ffff:a.b.c.d), ports in network byte order.
// 36 octets.
struct tfp_key {
  __u8 app[16];
  __u8 server[16];
  __be16 app_port;
  __be16 server_port;
};

// Where its QUIC short headers leave instead: the relay socket's own address and port (the
// address the server has validated), out of `ifindex` with the protected sockets' mark (so
// the route lookup of the redirect takes their table). The counters are the program's,
// added atomically; the loader creates the entry with zeros.
struct tfp_value {
  __u8 native[16];
  __be16 native_port;
  __u16 pad;
  __u32 ifindex;
  __u32 mark;
  __u32 pad2;
  __u64 packets;  // datagrams
  __u64 bytes;    // IP octets, headers included
};
