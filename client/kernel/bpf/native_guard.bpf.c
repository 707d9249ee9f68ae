// SPDX-License-Identifier: GPL-2.0
/* native_guard.bpf.c: the native path's guard and counters, as tc programs on a native
 * device (tcx links where the kernel has them, else a clsact filter; client/kernel/native_guard.cpp
 * loads and attaches them).
 *
 * ng_egress keeps invariant 1 in the kernel, whatever routed a packet to the native device:
 * a local packet (one with a socket: forwarded packets and the kernel's own have none, as
 * in the OUTPUT hook) is dropped if it is DNS (UDP or TCP port 53, either side), TCP (unless
 * to a native prefix), on a QUIC port a long header, a datagram too short to have a
 * header, or a GSO super-packet any of whose segments is a long header, or a raw socket's
 * non-first fragment. A drop, not a
 * detour: on this hook routing is done and a redirect to the channel device would skip its
 * egress rewrite; the sender's retransmission takes the channel once its route does. It
 * counts the QUIC short headers that pass (the native path's outbound packets and bytes)
 * and, for a watched flow (a port in ng_watch_ports, the flow in ng_watch), its packets.
 *
 * ng_ingress counts QUIC answers arriving natively and, for a watched flow, the answer: what
 * the migration watchdog decides from, without a packet ever leaving the kernel.
 *
 * Headers are read relative to the network header (bpf_skb_load_bytes_relative), so the
 * same program serves Ethernet and raw-IP devices (PPP, mobile broadband, tun); payload in
 * pages (GSO batches) is made linear first (ng_load). Both return
 * TC_ACT_UNSPEC for what they let pass: the next program on the device decides too.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "native_guard_shared.h"

#define NG_MAX_EXTENSION_HEADERS 4
#define NG_MAX_GSO_SEGMENTS 64
#define NG_DNS_PORT 53

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NG_COUNTER_SLOTS);
  __type(key, __u32);
  __type(value, struct ng_counter);
} ng_counters SEC(".maps");

/* One bit per port (host order): the QUIC ports (remote side). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, NG_PORT_WORDS);
  __type(key, __u32);
  __type(value, __u64);
} ng_quic_ports SEC(".maps");

/* One bit per local port (host order) with a watched flow: most packets stop at this bit. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, NG_PORT_WORDS);
  __type(key, __u32);
  __type(value, __u64);
} ng_watch_ports SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct ng_flow_key);
  __type(value, struct ng_flow_state);
} ng_watch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, 1024);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct ng_prefix_key);
  __type(value, __u8);
} ng_prefixes SEC(".maps");

/* What the guard needs of a packet's network header. Addresses as IPv6 (IPv4 mapped). */
struct ng_packet {
  __u8 saddr[16];
  __u8 daddr[16];
  __u32 l4_offset; /* from the network header */
  __u8 protocol;
  __u8 non_first_fragment;
  __u8 unparsed;
};

static __always_inline void ng_count(__u32 slot, __u64 packets, __u64 bytes) {
  struct ng_counter *c = bpf_map_lookup_elem(&ng_counters, &slot);
  if (c) {
    c->packets += packets;
    c->bytes += bytes;
  }
}

static __always_inline int ng_port_bit(void *bitmap, __u16 port) {
  __u32 word = port / 64;
  __u64 *bits = bpf_map_lookup_elem(bitmap, &word);
  return bits && (*bits & (1ULL << (port % 64)));
}

static __always_inline void ng_map_v4(__u8 *to, __be32 addr) {
  __builtin_memset(to, 0, 10);
  to[10] = 0xff;
  to[11] = 0xff;
  __builtin_memcpy(to + 12, &addr, 4);
}

/* 0 on success (p filled), -1 for neither IPv4 nor IPv6 or an unreadable header. */
static __always_inline int ng_parse(struct __sk_buff *skb, struct ng_packet *p) {
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    struct iphdr ip;
    if (bpf_skb_load_bytes_relative(skb, 0, &ip, sizeof ip, BPF_HDR_START_NET)) return -1;
    ng_map_v4(p->saddr, ip.saddr);
    ng_map_v4(p->daddr, ip.daddr);
    p->l4_offset = ip.ihl * 4;
    p->protocol = ip.protocol;
    p->non_first_fragment = (bpf_ntohs(ip.frag_off) & 0x1fff) != 0;
    return 0;
  }
  if (skb->protocol != bpf_htons(ETH_P_IPV6)) return -1;
  struct ipv6hdr ip6;
  if (bpf_skb_load_bytes_relative(skb, 0, &ip6, sizeof ip6, BPF_HDR_START_NET)) return -1;
  __builtin_memcpy(p->saddr, &ip6.saddr, 16);
  __builtin_memcpy(p->daddr, &ip6.daddr, 16);
  __u8 next = ip6.nexthdr;
  __u32 offset = sizeof ip6;
  for (int i = 0; i < NG_MAX_EXTENSION_HEADERS; i++) {
    __u8 ext[8];
    if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS) {
      if (bpf_skb_load_bytes_relative(skb, offset, ext, 2, BPF_HDR_START_NET)) return -1;
      next = ext[0];
      offset += (ext[1] + 1) * 8;
    } else if (next == IPPROTO_FRAGMENT) {
      if (bpf_skb_load_bytes_relative(skb, offset, ext, 8, BPF_HDR_START_NET)) return -1;
      next = ext[0];
      p->non_first_fragment = (((__u16)ext[2] << 8 | ext[3]) & 0xfff8) != 0;
      offset += 8;
    } else {
      break;
    }
  }
  p->unparsed = next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING ||
                next == IPPROTO_DSTOPTS || next == IPPROTO_FRAGMENT;
  p->l4_offset = offset;
  p->protocol = next;
  return 0;
}

/* Reads len octets at offset from the network header. The relative load reads only the
 * linear part of a packet; a datagram whose payload sits in pages (a GSO batch, a zero-copy
 * send) is made linear first, once, and read again. 0 on success. */
static __always_inline int ng_load(struct __sk_buff *skb, __u32 offset, void *to, __u32 len) {
  if (bpf_skb_load_bytes_relative(skb, offset, to, len, BPF_HDR_START_NET) == 0) return 0;
  if (bpf_skb_pull_data(skb, skb->len)) return -1;
  return bpf_skb_load_bytes_relative(skb, offset, to, len, BPF_HDR_START_NET) ? -1 : 0;
}

static __always_inline int ng_native_prefix(const __u8 *addr) {
  struct ng_prefix_key key = {.prefixlen = 128};
  __builtin_memcpy(key.addr, addr, 16);
  return bpf_map_lookup_elem(&ng_prefixes, &key) != 0;
}

static __always_inline int ng_drop(__u32 slot, struct __sk_buff *skb) {
  ng_count(slot, 1, skb->len);
  return TC_ACT_SHOT;
}

/* A watched flow's native packets out (its source port's bit set): counted in its entry. */
static __always_inline void ng_watch_sent(const struct ng_packet *p, const __be16 *ports,
                                          __u32 segments, __u32 len) {
  if (!ng_port_bit(&ng_watch_ports, bpf_ntohs(ports[0]))) return;
  struct ng_flow_key key = {.local_port = ports[0], .remote_port = ports[1]};
  __builtin_memcpy(key.local, p->saddr, 16);
  __builtin_memcpy(key.remote, p->daddr, 16);
  struct ng_flow_state *state = bpf_map_lookup_elem(&ng_watch, &key);
  if (state) {
    __sync_fetch_and_add(&state->sent, segments);
    ng_count(NG_WATCH_SENT, segments, len);
  }
}

/* A packet without a socket: forwarded (a LAN host's, after this host's NAT), or made by the
 * kernel. Not judged: the routing rules chose its path, and the guard judges local apps'
 * packets. Its QUIC short headers are counted (native_out), and a watched flow's for the
 * watchdog: a LAN host's moved flow, under this host's address and the port its masquerade
 * kept (RoutedPath watches that key beside the flow's own). */
static __noinline int ng_egress_forwarded(struct __sk_buff *skb) {
  struct ng_packet p = {};
  if (ng_parse(skb, &p) || p.unparsed || p.non_first_fragment || p.protocol != IPPROTO_UDP)
    return TC_ACT_UNSPEC;
  __be16 ports[2];
  if (bpf_skb_load_bytes_relative(skb, p.l4_offset, ports, sizeof ports, BPF_HDR_START_NET))
    return TC_ACT_UNSPEC;
  if (!ng_port_bit(&ng_quic_ports, bpf_ntohs(ports[1]))) return TC_ACT_UNSPEC;
  __u8 first;
  if (ng_load(skb, p.l4_offset + sizeof(struct udphdr), &first, 1) || (first & 0x80))
    return TC_ACT_UNSPEC;
  __u32 segments = skb->gso_segs > 1 ? skb->gso_segs : 1;
  ng_count(NG_NATIVE_OUT, segments, skb->len);
  ng_watch_sent(&p, ports, segments, skb->len);
  return TC_ACT_UNSPEC;
}

/* The whole guard, any packet, headers read by helpers. */
static __noinline int ng_egress_generic(struct __sk_buff *skb) {
  if (!skb->sk) return ng_egress_forwarded(skb);
  struct ng_packet p = {};
  if (ng_parse(skb, &p)) return TC_ACT_UNSPEC;
  if (p.unparsed) return ng_drop(NG_DROP_UNPARSED, skb);
  /* A later fragment has no ports; its datagram's first fragment carries the header. A
   * socket's own datagrams were routed by their ports before they were fragmented; only a
   * raw socket hands the kernel fragments it made, whose ports nobody saw: dropped. */
  if (p.non_first_fragment) {
    struct bpf_sock *sk = skb->sk;
    if (sk) sk = bpf_sk_fullsock(sk);
    if (sk && sk->type == 3 /* SOCK_RAW */) return ng_drop(NG_DROP_RAW_FRAGMENT, skb);
    return TC_ACT_UNSPEC;
  }
  if (p.protocol != IPPROTO_UDP && p.protocol != IPPROTO_TCP) return TC_ACT_UNSPEC;

  __be16 ports[2]; /* source, destination: the same place in UDP and TCP */
  if (bpf_skb_load_bytes_relative(skb, p.l4_offset, ports, sizeof ports, BPF_HDR_START_NET))
    return ng_drop(p.protocol == IPPROTO_TCP ? NG_DROP_TCP : NG_DROP_LONG, skb);
  __u16 sport = bpf_ntohs(ports[0]), dport = bpf_ntohs(ports[1]);
  if (sport == NG_DNS_PORT || dport == NG_DNS_PORT) {
    /* An answer from a resolver on this host (or a transparent proxy's, from the server's
     * address) to a LAN host in the native prefixes: no name leaves for the censor. A query
     * never passes: DNS to the prefixes takes the channel (a LAN resolver forwards). */
    if (dport != NG_DNS_PORT && ng_native_prefix(p.daddr)) return TC_ACT_UNSPEC;
    return ng_drop(NG_DROP_DNS, skb);
  }
  if (p.protocol == IPPROTO_TCP) {
    if (ng_native_prefix(p.daddr)) return TC_ACT_UNSPEC;
    return ng_drop(NG_DROP_TCP, skb);
  }
  if (!ng_port_bit(&ng_quic_ports, dport)) return TC_ACT_UNSPEC;

  __u32 payload = p.l4_offset + sizeof(struct udphdr);
  __u8 first;
  if (ng_load(skb, payload, &first, 1) || (first & 0x80)) {
    if (ng_native_prefix(p.daddr)) return TC_ACT_UNSPEC;
    return ng_drop(NG_DROP_LONG, skb);
  }
  __u32 segments = 1;
  if (skb->gso_segs > 1 && skb->gso_size > 0) {
    /* One UDP header, then gso_size octets per segment: each segment's first octet. */
    segments = skb->gso_segs;
    for (__u32 k = 1; k < NG_MAX_GSO_SEGMENTS; k++) {
      if (k >= segments) break;
      if (ng_load(skb, payload + k * skb->gso_size, &first, 1) || (first & 0x80)) {
        if (ng_native_prefix(p.daddr)) return TC_ACT_UNSPEC;
        return ng_drop(NG_DROP_GSO, skb);
      }
    }
    if (segments > NG_MAX_GSO_SEGMENTS && !ng_native_prefix(p.daddr))
      return ng_drop(NG_DROP_GSO, skb); /* more than the guard reads: not let through unread */
  }
  ng_count(NG_NATIVE_OUT, segments, skb->len);
  ng_count(NG_NATIVE_OUT_GENERIC, segments, skb->len);

  ng_watch_sent(&p, ports, segments, skb->len);
  return TC_ACT_UNSPEC;
}

static __noinline int ng_ingress_generic(struct __sk_buff *skb) {
  struct ng_packet p = {};
  if (ng_parse(skb, &p) || p.protocol != IPPROTO_UDP || p.non_first_fragment)
    return TC_ACT_UNSPEC;
  __be16 ports[2];
  if (bpf_skb_load_bytes_relative(skb, p.l4_offset, ports, sizeof ports, BPF_HDR_START_NET))
    return TC_ACT_UNSPEC;
  __u16 sport = bpf_ntohs(ports[0]), dport = bpf_ntohs(ports[1]);
  if (!ng_port_bit(&ng_quic_ports, sport)) return TC_ACT_UNSPEC;
  ng_count(NG_NATIVE_IN, 1, skb->len);
  ng_count(NG_NATIVE_IN_GENERIC, 1, skb->len);
  if (ng_port_bit(&ng_watch_ports, dport)) {
    struct ng_flow_key key = {.local_port = ports[1], .remote_port = ports[0]};
    __builtin_memcpy(key.local, p.daddr, 16);
    __builtin_memcpy(key.remote, p.saddr, 16);
    struct ng_flow_state *state = bpf_map_lookup_elem(&ng_watch, &key);
    if (state) {
      __sync_fetch_and_add(&state->answered, 1);
      __u64 now = bpf_ktime_get_ns();
      state->last_answer_ns = now;
      if (!state->first_answer_ns) state->first_answer_ns = now;
      ng_count(NG_WATCH_ANSWERED, 1, skb->len);
    }
  }
  return TC_ACT_UNSPEC;
}

/* The fast path, for devices whose link header length is known when the guard is attached
 * (l2: 14 on Ethernet, 0 on raw-IP devices): a UDP datagram with no IP options, extension
 * headers or fragmentation, whose first payload octet is in the linear part, is read
 * directly (about half the cost of the helper loads, bench_rule_cost.py). It decides only
 * the common cases — a QUIC short header of an unwatched flow, a datagram to another port —
 * and hands everything else to the generic path, which counts and drops. NULL: not such a
 * datagram. */
static __always_inline struct udphdr *ng_plain_udp(struct __sk_buff *skb, __u32 l2) {
  void *data = (void *)(long)skb->data;
  void *end = (void *)(long)skb->data_end;
  struct udphdr *udp;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    struct iphdr *ip = data + l2;
    if ((void *)(ip + 1) > end) return 0;
    if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
        (ip->frag_off & bpf_htons(0x3fff)))
      return 0;
    udp = (void *)(ip + 1);
  } else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr *ip6 = data + l2;
    if ((void *)(ip6 + 1) > end) return 0;
    if (ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP) return 0;
    udp = (void *)(ip6 + 1);
  } else {
    return 0;
  }
  if ((void *)(udp + 1) + 1 > end) return 0;
  return udp;
}

static __always_inline int ng_egress_fast(struct __sk_buff *skb, __u32 l2) {
  if (!skb->sk) return ng_egress_forwarded(skb);
  struct udphdr *udp = ng_plain_udp(skb, l2);
  if (!udp || skb->gso_segs > 1) return ng_egress_generic(skb);
  __u16 sport = bpf_ntohs(udp->source), dport = bpf_ntohs(udp->dest);
  __u8 first = *(__u8 *)(udp + 1);
  if (sport == NG_DNS_PORT || dport == NG_DNS_PORT) return ng_egress_generic(skb);
  if (!ng_port_bit(&ng_quic_ports, dport)) return TC_ACT_UNSPEC;
  if ((first & 0x80) || ng_port_bit(&ng_watch_ports, sport)) return ng_egress_generic(skb);
  ng_count(NG_NATIVE_OUT, 1, skb->len);
  return TC_ACT_UNSPEC;
}

static __always_inline int ng_ingress_fast(struct __sk_buff *skb, __u32 l2) {
  struct udphdr *udp = ng_plain_udp(skb, l2);
  if (!udp) return ng_ingress_generic(skb);
  if (!ng_port_bit(&ng_quic_ports, bpf_ntohs(udp->source))) return TC_ACT_UNSPEC;
  if (ng_port_bit(&ng_watch_ports, bpf_ntohs(udp->dest))) return ng_ingress_generic(skb);
  ng_count(NG_NATIVE_IN, 1, skb->len);
  return TC_ACT_UNSPEC;
}

/* One pair per kind of device; the loader picks by the device's type. */
SEC("tc")
int ng_egress(struct __sk_buff *skb) { return ng_egress_generic(skb); }
SEC("tc")
int ng_ingress(struct __sk_buff *skb) { return ng_ingress_generic(skb); }
SEC("tc")
int ng_egress_eth(struct __sk_buff *skb) { return ng_egress_fast(skb, ETH_HLEN); }
SEC("tc")
int ng_ingress_eth(struct __sk_buff *skb) { return ng_ingress_fast(skb, ETH_HLEN); }
SEC("tc")
int ng_egress_l3(struct __sk_buff *skb) { return ng_egress_fast(skb, 0); }
SEC("tc")
int ng_ingress_l3(struct __sk_buff *skb) { return ng_ingress_fast(skb, 0); }

/* The channel device's egress (stateless addressing on the routed path): UDP leaves with the
 * tunnel address as its source. nft's netdev egress chain rewrites everything else (and
 * records the reverse mapping of UDP too); UDP is done here because of GSO. A UDP GSO
 * super-packet's checksum field holds the pseudo-header's sum, which segmentation
 * completes later; where the socket's route leads to a device without checksum offload (a
 * TUN: wireguard-go, a proxy client's TUN), the kernel (6.18 measured) marks it
 * CHECKSUM_NONE all the same, so every checksum helper (nft's payload set, bpf_l4_csum_replace,
 * NAT) adjusts that field as a complete checksum — in the wrong direction — and every segment
 * reaches the server with a bad checksum. Firefox (quinn-udp) sends its Initials that way:
 * no handshake ever completed. Here the field of a GSO packet is adjusted as the
 * pseudo-header sum it is; other datagrams by the helper. IPv4 fragments after the first
 * carry no UDP header: their address only. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ng_channel_source);
} ng_channel SEC(".maps");

static __always_inline __u16 ng_fold(__u64 sum) {
  sum = (sum & 0xffffffff) + (sum >> 32);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (__u16)((sum & 0xffff) + (sum >> 16));
}

/* The UDP checksum at `check_at` after the source changed from `from` to `to` (size octets). */
static __always_inline int ng_channel_l4(struct __sk_buff *skb, __u32 check_at, void *from,
                                         void *to, __u32 size, int v4) {
  __u16 check;
  if (bpf_skb_load_bytes(skb, check_at, &check, sizeof check)) return -1;
  if (skb->gso_size != 0) {
    /* The pseudo-header sum (not complemented): add the difference. */
    __s64 diff = bpf_csum_diff(from, size, to, size, 0);
    if (diff < 0) return -1;
    __u16 seed = ng_fold((__u64)check + (__u64)diff);
    ng_count(NG_CHANNEL_UDP_GSO, 1, skb->len);
    return bpf_skb_store_bytes(skb, check_at, &seed, sizeof seed, 0);
  }
  if (v4 && check == 0) return 0; /* IPv4 without a UDP checksum */
  __s64 diff = bpf_csum_diff(from, size, to, size, 0);
  if (diff < 0) return -1;
  return bpf_l4_csum_replace(skb, check_at, 0, diff, BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0);
}

/* Not UDP: nft's egress chain on this device, which runs before this program, wrote the
 * tunnel address into it. One that still carries another source met no such chain: the
 * table is gone (another tool flushed the ruleset) until the daemon puts it back. Its native
 * source must not enter the channel (a provider that does not check sources would hand it
 * to the server; measured: every TCP SYN of a stream while the ruleset was flushed): dropped
 * and counted. A family without a tunnel address is left to the rules (they drop it). */
static __always_inline int ng_channel_other(struct __sk_buff *skb,
                                            const struct ng_channel_source *c,
                                            const struct ng_packet *p) {
  __u8 differ = 0;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    if (!c->has_v4) return TC_ACT_UNSPEC;
    for (int i = 0; i < 4; i++) differ |= p->saddr[12 + i] ^ c->v4[i];
  } else {
    if (!c->has_v6) return TC_ACT_UNSPEC;
    for (int i = 0; i < 16; i++) differ |= p->saddr[i] ^ c->v6[i];
  }
  if (differ == 0) return TC_ACT_UNSPEC;
  ng_count(NG_CHANNEL_FOREIGN, 1, skb->len);
  return TC_ACT_SHOT;
}

SEC("tc")
int ng_channel_egress(struct __sk_buff *skb) {
  __u32 zero = 0;
  struct ng_channel_source *c = bpf_map_lookup_elem(&ng_channel, &zero);
  if (!c) return TC_ACT_UNSPEC;
  struct ng_packet p = {};
  if (ng_parse(skb, &p)) return TC_ACT_UNSPEC;
  if (p.protocol != IPPROTO_UDP) return ng_channel_other(skb, c, &p);
  __u32 net = c->link_header;
  if (net > 64) return TC_ACT_UNSPEC;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    if (!c->has_v4) return TC_ACT_UNSPEC;
    __be32 from, to;
    __builtin_memcpy(&from, p.saddr + 12, 4);
    __builtin_memcpy(&to, c->v4, 4);
    if (from == to) return TC_ACT_UNSPEC;
    if (!p.non_first_fragment &&
        ng_channel_l4(skb, net + p.l4_offset + __builtin_offsetof(struct udphdr, check), &from, &to, 4, 1))
      return TC_ACT_SHOT;
    if (bpf_l3_csum_replace(skb, net + __builtin_offsetof(struct iphdr, check), from, to, 4) ||
        bpf_skb_store_bytes(skb, net + __builtin_offsetof(struct iphdr, saddr), &to, 4, 0))
      return TC_ACT_SHOT;
  } else {
    if (!c->has_v6) return TC_ACT_UNSPEC;
    __u8 from[16], to[16];
    __builtin_memcpy(from, p.saddr, 16);
    __builtin_memcpy(to, c->v6, 16);
    __u32 differ = 0;
    for (int i = 0; i < 16; i++) differ |= from[i] ^ to[i];
    if (differ == 0) return TC_ACT_UNSPEC;
    if (p.unparsed) {
      ng_count(NG_CHANNEL_UNPARSED, 1, skb->len);
      return TC_ACT_SHOT;
    }
    if (!p.non_first_fragment &&
        ng_channel_l4(skb, net + p.l4_offset + __builtin_offsetof(struct udphdr, check), from, to, 16, 0))
      return TC_ACT_SHOT;
    if (bpf_skb_store_bytes(skb, net + __builtin_offsetof(struct ipv6hdr, saddr), to, 16, 0))
      return TC_ACT_SHOT;
  }
  ng_count(NG_CHANNEL_UDP, 1, skb->len);
  return TC_ACT_UNSPEC;
}

char _license[] SEC("license") = "GPL";
