// SPDX-License-Identifier: GPL-2.0
/* hook_cost.bpf.c: the tc programs whose per-packet cost bench_hook_cost.py measures against
 * nftables base chains. They stand in for what an inbound counter or an outbound guard of
 * quicstepd would do on a native packet; they never change a verdict (always TC_ACT_OK).
 *
 * One source, variants chosen at compile time (bench_hook_cost.py builds each):
 *   HOOK_RETURN_ONLY=1   returns at once: the cost of the attachment alone.
 *   HOOK_INGRESS=1|0     the packet of interest is a server's answer (UDP source port 443)
 *                        or a client's datagram to a server (UDP destination port 443).
 *   HOOK_FLOW_LOOKUP=1   also looks the 4-tuple up in a hash map (what a per-flow decision
 *                        would cost); a hit is counted in hc_counters[1].
 * Every variant but the first counts the packets of interest in hc_counters[0] (per CPU),
 * which the benchmark checks against the packets it sent, and looks their local port up in
 * a bitmap of watched ports (empty here), as a guard would before letting a packet pass.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef HOOK_RETURN_ONLY
#define HOOK_RETURN_ONLY 0
#endif
#ifndef HOOK_INGRESS
#define HOOK_INGRESS 1
#endif
#ifndef HOOK_FLOW_LOOKUP
#define HOOK_FLOW_LOOKUP 0
#endif

#define QUIC_PORT 443
#define WATCHED_PORT_WORDS (65536 / 64)

#if !HOOK_RETURN_ONLY

struct hc_counter {
  __u64 packets;
  __u64 bytes;
};

/* [0]: packets of interest; [1]: those found in hc_flows (HOOK_FLOW_LOOKUP only). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 2);
  __type(key, __u32);
  __type(value, struct hc_counter);
} hc_counters SEC(".maps");

/* One bit per local port; left empty, so the lookup is made and never diverts. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, WATCHED_PORT_WORDS);
  __type(key, __u32);
  __type(value, __u64);
} hc_watched SEC(".maps");

#if HOOK_FLOW_LOOKUP
/* Network byte order throughout, as in the headers: no conversion per packet. The
 * benchmark writes the outbound flow's key with bpftool (12 octets, no padding). */
struct hc_flow_key {
  __be32 saddr;
  __be32 daddr;
  __be16 sport;
  __be16 dport;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct hc_flow_key);
  __type(value, __u32);
} hc_flows SEC(".maps");
#endif

static __always_inline void hc_count(__u32 index, __u32 len) {
  struct hc_counter *c = bpf_map_lookup_elem(&hc_counters, &index);
  if (c) {
    c->packets++;
    c->bytes += len;
  }
}

#endif /* !HOOK_RETURN_ONLY */

SEC("tc")
int hc_prog(struct __sk_buff *skb) {
#if HOOK_RETURN_ONLY
  return TC_ACT_OK;
#else
  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > data_end) return TC_ACT_OK;
  if (eth->h_proto != bpf_htons(ETH_P_IP)) return TC_ACT_OK;
  struct iphdr *ip = (void *)(eth + 1);
  if ((void *)(ip + 1) > data_end) return TC_ACT_OK;
  /* Options would move the UDP header; the benchmark's datagrams have none. */
  if (ip->protocol != IPPROTO_UDP || ip->ihl != 5) return TC_ACT_OK;
  struct udphdr *udp = (void *)(ip + 1);
  if ((void *)(udp + 1) > data_end) return TC_ACT_OK;

#if HOOK_INGRESS
  if (udp->source != bpf_htons(QUIC_PORT)) return TC_ACT_OK;
  __u16 local_port = bpf_ntohs(udp->dest);
#else
  if (udp->dest != bpf_htons(QUIC_PORT)) return TC_ACT_OK;
  __u16 local_port = bpf_ntohs(udp->source);
#endif
  hc_count(0, skb->len);

  __u32 word = local_port / 64;
  __u64 *bits = bpf_map_lookup_elem(&hc_watched, &word);
  if (bits && (*bits & (1ULL << (local_port % 64)))) {
    return TC_ACT_OK; /* a watched port: a guard would hand it to the daemon here */
  }
#if HOOK_FLOW_LOOKUP
  struct hc_flow_key key = {
      .saddr = ip->saddr, .daddr = ip->daddr, .sport = udp->source, .dport = udp->dest};
  if (bpf_map_lookup_elem(&hc_flows, &key)) hc_count(1, skb->len);
#endif
  return TC_ACT_OK;
#endif /* HOOK_RETURN_ONLY */
}

char _license[] SEC("license") = "GPL";
