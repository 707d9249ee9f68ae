// SPDX-License-Identifier: GPL-2.0
/* tun_fast_path.bpf.c: quicstep-tun's kernel fast path for moved flows (Linux only; the
 * loader is client/tun/linux/tun_fast_path.cpp).
 *
 * On the TUN device's egress, that is on what the applications send into the TUN: a QUIC
 * short header of a flow in tfp_flows (a flow whose relay socket the server has answered:
 * the engine puts it there and takes it out) leaves at once from the native device, as if
 * the relay socket had sent it: its source becomes the relay socket's address and port, it
 * gets the protected sockets' mark, and bpf_redirect_neigh sends it out of that socket's
 * device (route and neighbour looked up there). Everything else (a long header, another
 * flow, not UDP, an IPv4 fragment, IPv6 with extension headers) goes on into the TUN, to
 * the engine, as before. So the program only shortens a path the engine has already chosen:
 * it never sends natively what the engine would not, and without the engine (its link goes
 * with its process) nothing passes it.
 *
 * A GSO super-packet (an application's UDP_SEGMENT send, Firefox's) is never sent here: only
 * its first segment could be judged, so the engine takes it, as without the fast path. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "tun_fast_path_shared.h"

#define TFP_MAX_FLOWS 4096

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, TFP_MAX_FLOWS);
  __type(key, struct tfp_key);
  __type(value, struct tfp_value);
} tfp_flows SEC(".maps");

static __always_inline int tfp_udp_checksum(struct __sk_buff *skb, __u32 check_at, void *from,
                                            void *to, __u32 size, __be16 from_port,
                                            __be16 to_port, int v4) {
  __u16 check;
  if (bpf_skb_load_bytes(skb, check_at, &check, sizeof check)) return -1;
  __s64 diff = bpf_csum_diff(from, size, to, size, 0);
  if (diff < 0) return -1;
  if (v4 && check == 0) return 0; /* IPv4 without a UDP checksum */
  if (bpf_l4_csum_replace(skb, check_at, 0, diff, BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0))
    return -1;
  return bpf_l4_csum_replace(skb, check_at, from_port, to_port,
                             sizeof(__be16) | BPF_F_MARK_MANGLED_0);
}

static __always_inline void tfp_count(struct tfp_value *v, struct __sk_buff *skb) {
  __sync_fetch_and_add(&v->packets, 1);
  __sync_fetch_and_add(&v->bytes, skb->len);
}

/* Out of the native device. bpf_redirect_neigh takes an Ethernet header off the packet before
 * it looks up the route and the next hop's address (and drops one without): a TUN's packet
 * has none, so a blank one (unicast, the packet's protocol) is pushed in front first. */
static __always_inline int tfp_redirect(struct __sk_buff *skb, const struct tfp_value *v) {
  __u32 ifindex = v->ifindex;
  skb->mark = v->mark;
  if (bpf_skb_change_head(skb, ETH_HLEN, 0)) return TC_ACT_SHOT;
  struct ethhdr eth = {};
  eth.h_proto = (__be16)skb->protocol;
  if (bpf_skb_store_bytes(skb, 0, &eth, sizeof eth, 0)) return TC_ACT_SHOT;
  return bpf_redirect_neigh(ifindex, NULL, 0, 0);
}

SEC("tc")
int tfp_egress(struct __sk_buff *skb) {
  struct tfp_key key = {};
  __u8 first;
  /* A GSO super-packet (an application's UDP_SEGMENT send) is judged by its first segment
   * only here; a later one could be a long header (a new connection's Initial on the same
   * socket). It goes to the engine, whose TUN read gets the kernel's segments one by one. */
  if (skb->gso_size != 0) return TC_ACT_UNSPEC;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    struct iphdr ip;
    struct udphdr udp;
    if (bpf_skb_load_bytes(skb, 0, &ip, sizeof ip)) return TC_ACT_UNSPEC;
    if (ip.ihl != 5 || ip.protocol != IPPROTO_UDP || (ip.frag_off & bpf_htons(0x3fff)))
      return TC_ACT_UNSPEC;
    if (bpf_skb_load_bytes(skb, sizeof ip, &udp, sizeof udp) ||
        bpf_skb_load_bytes(skb, sizeof ip + sizeof udp, &first, 1))
      return TC_ACT_UNSPEC;
    if (first & 0x80) return TC_ACT_UNSPEC; /* a long header: the engine's */
    key.app[10] = key.app[11] = 0xff;
    key.server[10] = key.server[11] = 0xff;
    __builtin_memcpy(key.app + 12, &ip.saddr, 4);
    __builtin_memcpy(key.server + 12, &ip.daddr, 4);
    key.app_port = udp.source;
    key.server_port = udp.dest;
    struct tfp_value *v = bpf_map_lookup_elem(&tfp_flows, &key);
    if (!v) return TC_ACT_UNSPEC;
    __be32 from = ip.saddr, to;
    __builtin_memcpy(&to, v->native + 12, 4);
    if (tfp_udp_checksum(skb, sizeof ip + __builtin_offsetof(struct udphdr, check), &from, &to,
                         4, udp.source, v->native_port, 1) ||
        bpf_l3_csum_replace(skb, __builtin_offsetof(struct iphdr, check), from, to, 4) ||
        bpf_skb_store_bytes(skb, __builtin_offsetof(struct iphdr, saddr), &to, 4, 0) ||
        bpf_skb_store_bytes(skb, sizeof ip + __builtin_offsetof(struct udphdr, source),
                            &v->native_port, sizeof v->native_port, 0))
      return TC_ACT_SHOT;
    tfp_count(v, skb);
    return tfp_redirect(skb, v);
  }
  if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr ip;
    struct udphdr udp;
    if (bpf_skb_load_bytes(skb, 0, &ip, sizeof ip)) return TC_ACT_UNSPEC;
    if (ip.nexthdr != IPPROTO_UDP) return TC_ACT_UNSPEC;
    if (bpf_skb_load_bytes(skb, sizeof ip, &udp, sizeof udp) ||
        bpf_skb_load_bytes(skb, sizeof ip + sizeof udp, &first, 1))
      return TC_ACT_UNSPEC;
    if (first & 0x80) return TC_ACT_UNSPEC;
    __builtin_memcpy(key.app, &ip.saddr, 16);
    __builtin_memcpy(key.server, &ip.daddr, 16);
    key.app_port = udp.source;
    key.server_port = udp.dest;
    struct tfp_value *v = bpf_map_lookup_elem(&tfp_flows, &key);
    if (!v) return TC_ACT_UNSPEC;
    __u8 from[16], to[16];
    __builtin_memcpy(from, &ip.saddr, 16);
    __builtin_memcpy(to, v->native, 16);
    if (tfp_udp_checksum(skb, sizeof ip + __builtin_offsetof(struct udphdr, check), from, to,
                         16, udp.source, v->native_port, 0) ||
        bpf_skb_store_bytes(skb, __builtin_offsetof(struct ipv6hdr, saddr), to, 16, 0) ||
        bpf_skb_store_bytes(skb, sizeof ip + __builtin_offsetof(struct udphdr, source),
                            &v->native_port, sizeof v->native_port, 0))
      return TC_ACT_SHOT;
    tfp_count(v, skb);
    return tfp_redirect(skb, v);
  }
  return TC_ACT_UNSPEC;
}

char _license[] SEC("license") = "GPL";
