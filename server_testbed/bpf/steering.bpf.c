// SPDX-License-Identifier: GPL-2.0
/* steering.bpf.c: selects the quicstep-server worker socket of a QUIC datagram by the worker
 * id encoded in its Destination Connection ID (SK_REUSEPORT program over a
 * REUSEPORT_SOCKARRAY). A DCID that is not ours (a client's first Initial), a malformed
 * packet, or steering switched off returns SK_PASS without a selection: the kernel's
 * 4-tuple hash decides, as without the program. Nothing is ever dropped here: the worker
 * counts and handles bad packets in user space.
 *
 * qs_steer_test is the same decision behind a tc (SCHED_CLS) entry point, because the
 * kernel has no BPF_PROG_TEST_RUN for SK_REUSEPORT programs; it lets the unit tests run the
 * decision and the counters over Ethernet frames. It is never attached.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "steering_shared.h"

#define UDP_HDR_LEN 8u

struct {
  __uint(type, BPF_MAP_TYPE_REUSEPORT_SOCKARRAY);
  __uint(max_entries, QS_SOCKARRAY_LEN);
  __type(key, __u32);
  __type(value, __u32);
} qs_sockets SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct qs_steer_config);
} qs_config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct qs_steer_counters);
} qs_counters SEC(".maps");

/* Verified client flows (written by quicstep-gate): their Initials bypass the gate. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, QS_ALLOW_MAX_ENTRIES);
  __type(key, struct qs_allow_key);
  __type(value, __u64);
} qs_allow SEC(".maps");

/* Copies min(payload_len, QS_STEER_PEEK_LEN) octets at off into buf. One constant-size load
 * for ordinary packets; octet by octet (bounded) for short ones, since the verifier wants
 * constant or provably non-zero bounded sizes. Returns 0, or -1 when nothing could be read. */
static __always_inline int qs_load_peek(void *ctx, __u32 off, __u32 payload_len, __u8 *buf) {
  if (payload_len == 0) return -1;
  if (payload_len >= QS_STEER_PEEK_LEN) return bpf_skb_load_bytes(ctx, off, buf, QS_STEER_PEEK_LEN);
  for (__u32 i = 0; i < QS_STEER_PEEK_LEN; i++) {
    if (i >= payload_len) break;
    if (bpf_skb_load_bytes(ctx, off + i, &buf[i], 1) != 0) return -1;
  }
  return 0;
}

/* Loads the first octets of the payload at off and decides. ctx is either context type:
 * bpf_skb_load_bytes takes both. */
static __always_inline int qs_decide_at(void *ctx, __u32 off, __u32 payload_len, __u32 *worker,
                                        struct qs_steer_counters *cnt, __u8 *buf) {
  __u32 zero = 0;
  struct qs_steer_config *cfg = bpf_map_lookup_elem(&qs_config, &zero);
  int verdict;

  if (!cfg) {
    verdict = QS_STEER_DISABLED;
  } else if (!cfg->enabled) {
    verdict = QS_STEER_DISABLED;
  } else {
    if (qs_load_peek(ctx, off, payload_len, buf) != 0) {
      verdict = QS_STEER_MALFORMED;
    } else {
      verdict = qs_steer_decide(buf, payload_len, cfg, worker);
    }
  }
  if (cnt) {
    cnt->packets++;
    if (verdict == QS_STEER_FALLBACK) cnt->fallback++;
    if (verdict == QS_STEER_MALFORMED) cnt->malformed++;
    if (verdict == QS_STEER_DISABLED) cnt->disabled++;
  }
  return verdict;
}

/* 1 when the datagram's source flow is in the allowlist and not expired. */
static __always_inline int qs_allowlisted(struct sk_reuseport_md *ctx) {
  struct qs_allow_key key = {0};
  if (bpf_skb_load_bytes(ctx, 0, key.port, 2) != 0) return 0;
  if (ctx->eth_protocol == bpf_htons(ETH_P_IP)) {
    key.family = 4;
    if (bpf_skb_load_bytes_relative(ctx, 12, key.addr, 4, BPF_HDR_START_NET) != 0) return 0;
  } else if (ctx->eth_protocol == bpf_htons(ETH_P_IPV6)) {
    key.family = 6;
    if (bpf_skb_load_bytes_relative(ctx, 8, key.addr, 16, BPF_HDR_START_NET) != 0) return 0;
  } else {
    return 0;
  }
  __u64 *expiry = bpf_map_lookup_elem(&qs_allow, &key);
  if (!expiry) return 0;
  if (*expiry < bpf_ktime_get_ns()) {
    bpf_map_delete_elem(&qs_allow, &key);
    return 0;
  }
  return 1;
}

/* 1 when a v1 Initial (buf: its first octets) carries a token: the Token Length varint after
 * the SCID is not 0. Loaded at a variable offset (the helper checks bounds). */
static __always_inline int qs_initial_has_token(struct sk_reuseport_md *ctx, const __u8 *buf) {
  __u8 b = 0;
  __u32 dcid_len = buf[5];
  if (dcid_len > QS_STEER_MAX_CID_LEN) return 0;
  __u32 off = UDP_HDR_LEN + 6 + dcid_len;
  if (bpf_skb_load_bytes(ctx, off, &b, 1) != 0) return 0;
  __u32 scid_len = b;
  if (scid_len > QS_STEER_MAX_CID_LEN) return 0;
  off += 1 + scid_len;
  if (bpf_skb_load_bytes(ctx, off, &b, 1) != 0) return 0;
  return b != 0;
}

/* Gate mode: v1 Initials go to the gate's socket, except those with a token from an
 * allowlisted flow (a token-less Initial always goes to the gate, even from an allowlisted
 * address and port: ports get reused, and a spoofer may use a verified flow's); everything else
 * goes to a worker (by DCID, or by the DCID hash when the DCID is not ours), never to the
 * kernel's hash, which could pick the gate's socket. */
static __always_inline int qs_gate_select(struct sk_reuseport_md *ctx, const __u8 *buf,
                                          __u32 payload_len, int verdict, __u32 worker,
                                          struct qs_steer_counters *cnt) {
  __u32 zero = 0;
  struct qs_steer_config *cfg = bpf_map_lookup_elem(&qs_config, &zero);
  if (!cfg) return SK_PASS;
  if (qs_steer_is_v1_initial(buf, payload_len)) {
    if (qs_initial_has_token(ctx, buf) && qs_allowlisted(ctx)) {
      if (cnt) cnt->allowlisted++;
    } else {
      __u32 gate = QS_GATE_SLOT;
      if (bpf_sk_select_reuseport(ctx, &qs_sockets, &gate, 0) == 0) {
        if (cnt) cnt->gate++;
        return SK_PASS;
      }
      if (cnt) cnt->gate_absent++;
    }
  }
  if (verdict != QS_STEER_WORKER) worker = qs_steer_dcid_worker(buf, payload_len, cfg->worker_count);
  if (bpf_sk_select_reuseport(ctx, &qs_sockets, &worker, 0) == 0) {
    if (cnt && verdict == QS_STEER_WORKER) cnt->steered++;
  } else if (cnt) {
    cnt->select_failed++;
  }
  return SK_PASS;
}

SEC("sk_reuseport")
int qs_select_socket(struct sk_reuseport_md *ctx) {
  __u32 zero = 0;
  __u32 worker = 0;
  struct qs_steer_counters *cnt = bpf_map_lookup_elem(&qs_counters, &zero);
  struct qs_steer_config *cfg = bpf_map_lookup_elem(&qs_config, &zero);
  __u8 buf[QS_STEER_BUF_LEN] = {0};
  __u32 len = ctx->len;
  int verdict;

  if (len < UDP_HDR_LEN) {
    if (cnt) {
      cnt->packets++;
      cnt->malformed++;
    }
    return SK_PASS;
  }
  verdict = qs_decide_at(ctx, UDP_HDR_LEN, len - UDP_HDR_LEN, &worker, cnt, buf);
  if (cfg && cfg->enabled && cfg->gate) {
    return qs_gate_select(ctx, buf, len - UDP_HDR_LEN, verdict, worker, cnt);
  }
  if (verdict != QS_STEER_WORKER) return SK_PASS;
  if (bpf_sk_select_reuseport(ctx, &qs_sockets, &worker, 0) == 0) {
    if (cnt) cnt->steered++;
  } else if (cnt) {
    cnt->select_failed++;
  }
  return SK_PASS;
}

/* Test entry: returns the worker index (0..63) when the decision is QS_STEER_WORKER, else
 * 100 + the verdict. Parses Ethernet, IPv4 (any IHL) or IPv6 (no extension headers), UDP. */
SEC("tc")
int qs_steer_test(struct __sk_buff *skb) {
  __u32 zero = 0;
  __u32 worker = 0;
  struct qs_steer_counters *cnt = bpf_map_lookup_elem(&qs_counters, &zero);
  __u16 proto = 0;
  __u8 l4 = 0;
  __u32 l4_off = 0;
  int verdict;

  if (bpf_skb_load_bytes(skb, 12, &proto, 2) != 0) return 100 + QS_STEER_MALFORMED;
  if (proto == bpf_htons(ETH_P_IP)) {
    __u8 vihl = 0;
    if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) != 0) return 100 + QS_STEER_MALFORMED;
    if (bpf_skb_load_bytes(skb, ETH_HLEN + 9, &l4, 1) != 0) return 100 + QS_STEER_MALFORMED;
    l4_off = ETH_HLEN + (__u32)(vihl & 0x0f) * 4;
  } else if (proto == bpf_htons(ETH_P_IPV6)) {
    if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &l4, 1) != 0) return 100 + QS_STEER_MALFORMED;
    l4_off = ETH_HLEN + 40;
  } else {
    return 100 + QS_STEER_MALFORMED;
  }
  if (l4 != IPPROTO_UDP || skb->len < l4_off + UDP_HDR_LEN) return 100 + QS_STEER_MALFORMED;
  __u8 buf[QS_STEER_BUF_LEN] = {0};
  verdict = qs_decide_at(skb, l4_off + UDP_HDR_LEN, skb->len - l4_off - UDP_HDR_LEN, &worker,
                         cnt, buf);
  if (verdict != QS_STEER_WORKER) return 100 + verdict;
  if (cnt) cnt->steered++;
  return (int)worker;
}

char _license[] SEC("license") = "GPL";
