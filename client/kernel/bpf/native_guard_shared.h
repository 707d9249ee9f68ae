// native_guard_shared.h: what the native-path guard's BPF programs (native_guard.bpf.c) and
// their loader (client/kernel/native_guard.cpp) agree on: map value layouts and counter slots.
// Plain C, fixed-width kernel types, no padding surprises.
#pragma once

#include <linux/types.h>

// Slots of ng_counters (per CPU; the loader sums them).
enum ng_counter_slot {
  NG_NATIVE_OUT = 0,     // QUIC short headers that left on the native device
  NG_NATIVE_IN = 1,      // QUIC answers (from a QUIC port) that arrived on it
  NG_DROP_LONG = 2,      // QUIC long header (or a datagram too short for a header) dropped
  NG_DROP_DNS = 3,       // DNS (UDP or TCP port 53, either side) dropped
  NG_DROP_TCP = 4,       // TCP dropped (not to a native prefix)
  NG_DROP_GSO = 5,       // GSO super-packet with a long-header segment dropped
  NG_DROP_UNPARSED = 6,  // IPv6 with more extension headers than the guard walks, dropped
  NG_WATCH_SENT = 7,     // outbound packets of watched flows
  NG_WATCH_ANSWERED = 8, // inbound answers of watched flows
  NG_NATIVE_OUT_GENERIC = 9,  // of NG_NATIVE_OUT, those the generic path passed
  NG_NATIVE_IN_GENERIC = 10,  // of NG_NATIVE_IN, those the generic path counted
  NG_DROP_RAW_FRAGMENT = 11, // a raw socket's non-first fragment (no port to judge) dropped
  NG_CHANNEL_UDP = 12,       // channel: UDP datagrams whose source ng_channel_egress set
  NG_CHANNEL_UDP_GSO = 13,   // of those, GSO super-packets (their checksum seed adjusted)
  NG_CHANNEL_UNPARSED = 14,  // channel: UDP behind IPv6 extension headers it does not walk
  NG_CHANNEL_FOREIGN = 15,   // channel: not UDP, with a source nft did not set (table gone)
  NG_COUNTER_SLOTS = 16,
};

// The channel device's source rewrite for UDP (stateless addressing on the routed path):
// the tunnel addresses, and the link header's length on that device (0 on a layer-3
// device: WireGuard, a TUN; 14 on an Ethernet-framed one).
struct ng_channel_source {
  __u8 v4[4];
  __u8 v6[16];
  __u8 has_v4;
  __u8 has_v6;
  __u16 link_header;
};

struct ng_counter {
  __u64 packets;
  __u64 bytes;
};

// A flow the daemon watches (the migration watchdog): local and remote address as IPv6
// (IPv4 mapped, ::ffff:a.b.c.d), ports in network byte order. 36 octets, no padding.
struct ng_flow_key {
  __u8 local[16];
  __u8 remote[16];
  __be16 local_port;
  __be16 remote_port;
};

// Written by the programs only with atomic adds; the daemon creates the entry (zeros) and
// reads it at the watchdog's bound.
struct ng_flow_state {
  __u64 sent;      // native packets out since the entry was created
  __u64 answered;  // native answers in
  __u64 last_answer_ns;  // bpf_ktime_get_ns() of the last answer, 0 if none
  __u64 first_answer_ns; // of the first answer (CLOCK_MONOTONIC, as steady_clock), 0 if none
};

// Longest-prefix-match key of the native prefixes (destinations whose TCP and QUIC
// handshakes may go natively; DNS never does). IPv4 prefixes are stored IPv4-mapped.
struct ng_prefix_key {
  __u32 prefixlen;
  __u8 addr[16];
};

#define NG_PORT_WORDS (65536 / 64)
