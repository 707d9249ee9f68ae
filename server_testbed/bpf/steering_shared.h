/* steering_shared.h: the one definition of the steering program's maps and its decision,
 * shared by the BPF program (steering.bpf.c, compiled by clang -target bpf) and user space
 * (steering_loader.cpp, the unit tests). Fixed-width fields only; the layout is checked by
 * static_asserts on both sides so kernel and user space cannot drift apart.
 *
 * The decision is a pure function of the first bytes of a UDP payload and the config:
 * qs_steer_decide() reads at most QS_STEER_PEEK_LEN bytes from a buffer the caller filled
 * (zero-padded), so it is verifier-friendly (constant bounds) and also callable from C++.
 *
 * Connection-ID layout (QUIC-LB style, see cid_codec.hpp):
 *   octet 0: bits 7-6 config rotation id (3 = unroutable), bits 5-0 CID length minus one
 *   octet 1: worker id, XOR a keyed mask of the nonce when obfuscation is on
 *   octets 2..len-1: random nonce
 */
#ifndef QS_STEERING_SHARED_H
#define QS_STEERING_SHARED_H

#ifdef __bpf__
#include <linux/types.h>
typedef __u8 qs_u8;
typedef __u32 qs_u32;
typedef __u64 qs_u64;
#define QS_INLINE static __always_inline
#else
#include <stdint.h>
typedef uint8_t qs_u8;
typedef uint32_t qs_u32;
typedef uint64_t qs_u64;
#define QS_INLINE static inline
#endif

#define QS_STEER_MAX_WORKERS 64u
#define QS_STEER_MAX_CID_LEN 20u
#define QS_STEER_MIN_CID_LEN 4u
#define QS_STEER_MIN_OBFUSCATED_CID_LEN 10u /* first octet, worker, 8 nonce octets */
#define QS_STEER_UNROUTABLE_CONFIG 3u
/* first octet + version + DCID length + the longest DCID */
#define QS_STEER_PEEK_LEN 26u
#define QS_STEER_BUF_LEN 32u
#define QS_STEER_MASK_MULT 0x9E3779B97F4A7C15ull
/* Retry gate (README "Retry gate"): the gate's socket sits in the sockarray after the
 * workers' slots; verified client flows are kept in an LRU allowlist with an expiry. */
#define QS_GATE_SLOT QS_STEER_MAX_WORKERS
#define QS_SOCKARRAY_LEN (QS_STEER_MAX_WORKERS + 1u)
#define QS_ALLOW_MAX_ENTRIES 65536u

/* Config, one entry in an ARRAY map, written by user space before sockets get traffic. */
struct qs_steer_config {
  qs_u32 enabled;       /* 0: never select, the kernel's hash decides (steering off) */
  qs_u32 worker_count;  /* sockets 0..worker_count-1 are in the sockarray */
  qs_u8 config_id;      /* rotation bits the server issues (0..2) */
  qs_u8 cid_len;        /* length of every CID the server issues (4..20) */
  qs_u8 obfuscate;      /* 1: octet 1 is XORed with qs_steer_mask(key, nonce) */
  qs_u8 gate;           /* 1: v1 Initials from flows not in the allowlist go to QS_GATE_SLOT,
                           and nothing is left to the kernel's hash (the gate's socket is in
                           the group) */
  qs_u8 reserved[4];
  qs_u64 key;           /* obfuscation key (not secret against an analyst: see README) */
};

/* Counters, one entry in a PERCPU_ARRAY map; user space sums the CPUs. */
struct qs_steer_counters {
  qs_u64 packets;       /* every packet the program saw */
  qs_u64 steered;       /* a worker socket was selected by the DCID */
  qs_u64 fallback;      /* DCID not one of ours (client Initial, other config): kernel hash */
  qs_u64 malformed;     /* too short, DCID length > 20: kernel hash */
  qs_u64 select_failed; /* bpf_sk_select_reuseport refused (socket missing): kernel hash */
  qs_u64 disabled;      /* steering off: kernel hash */
  qs_u64 gate;          /* gate mode: an Initial was handed to the gate's socket */
  qs_u64 gate_absent;   /* gate mode: ... but the gate slot is empty (fail-open to workers) */
  qs_u64 allowlisted;   /* gate mode: an Initial of an allowlisted flow bypassed the gate */
};

/* The allowlist's key: a client flow (address and UDP port, network order). Value: the
 * CLOCK_MONOTONIC time in ns (bpf_ktime_get_ns) after which the entry no longer counts. */
struct qs_allow_key {
  qs_u8 family;         /* 4 or 6 */
  qs_u8 pad;
  qs_u8 port[2];        /* network order */
  qs_u8 addr[16];       /* IPv4 in the first 4 octets, the rest zero */
};

#ifndef __bpf__
#ifdef __cplusplus
static_assert(sizeof(struct qs_steer_config) == 24, "qs_steer_config layout");
static_assert(sizeof(struct qs_steer_counters) == 72, "qs_steer_counters layout");
static_assert(sizeof(struct qs_allow_key) == 20, "qs_allow_key layout");
#endif
#else
_Static_assert(sizeof(struct qs_steer_config) == 24, "qs_steer_config layout");
_Static_assert(sizeof(struct qs_steer_counters) == 72, "qs_steer_counters layout");
_Static_assert(sizeof(struct qs_allow_key) == 20, "qs_allow_key layout");
#endif

/* Verdicts of qs_steer_decide; QS_STEER_WORKER means *worker holds the index. */
enum qs_steer_verdict {
  QS_STEER_WORKER = 0,
  QS_STEER_FALLBACK = 1,
  QS_STEER_MALFORMED = 2,
  QS_STEER_DISABLED = 3,
};

/* The obfuscation mask of octet 1: a keyed multiplicative hash of the first 8 nonce octets.
 * It hides the worker id from a casual observer; it is not encryption (QUIC-LB's AES modes
 * cannot run in BPF). */
QS_INLINE qs_u8 qs_steer_mask(qs_u64 key, const qs_u8 *nonce8) {
  qs_u64 n = 0;
  n |= (qs_u64)nonce8[0] << 56;
  n |= (qs_u64)nonce8[1] << 48;
  n |= (qs_u64)nonce8[2] << 40;
  n |= (qs_u64)nonce8[3] << 32;
  n |= (qs_u64)nonce8[4] << 24;
  n |= (qs_u64)nonce8[5] << 16;
  n |= (qs_u64)nonce8[6] << 8;
  n |= (qs_u64)nonce8[7];
  return (qs_u8)(((n ^ key) * QS_STEER_MASK_MULT) >> 56);
}

/* Decodes a CID of length cid_len at buf[off]; QS_STEER_FALLBACK when it is not ours.
 * Precondition: off + cid_len <= QS_STEER_BUF_LEN (the caller checked). */
QS_INLINE int qs_steer_decode_cid(const qs_u8 *buf, qs_u32 off, qs_u32 cid_len,
                                  const struct qs_steer_config *cfg, qs_u32 *worker) {
  if (cid_len != cfg->cid_len || cid_len < QS_STEER_MIN_CID_LEN) return QS_STEER_FALLBACK;
  qs_u8 first = buf[off & (QS_STEER_BUF_LEN - 1)];
  if ((qs_u32)(first >> 6) != cfg->config_id) return QS_STEER_FALLBACK;
  if ((qs_u32)(first & 0x3f) + 1 != cid_len) return QS_STEER_FALLBACK;
  qs_u8 id = buf[(off + 1) & (QS_STEER_BUF_LEN - 1)];
  if (cfg->obfuscate) {
    if (cid_len < QS_STEER_MIN_OBFUSCATED_CID_LEN) return QS_STEER_FALLBACK;
    id ^= qs_steer_mask(cfg->key, &buf[(off + 2) & (QS_STEER_BUF_LEN - 1)]);
  }
  if (id >= cfg->worker_count) return QS_STEER_FALLBACK;
  *worker = id;
  return QS_STEER_WORKER;
}

/* The decision over the first len octets of a UDP payload, copied zero-padded into buf
 * (QS_STEER_BUF_LEN octets; len may exceed QS_STEER_PEEK_LEN, only the count matters).
 * Long header: DCID length octet at 5, DCID at 6 (any version, RFC 8999). Short header:
 * DCID at 1 with the configured length. */
QS_INLINE int qs_steer_decide(const qs_u8 *buf, qs_u32 len, const struct qs_steer_config *cfg,
                              qs_u32 *worker) {
  if (!cfg->enabled) return QS_STEER_DISABLED;
  if (len < 1) return QS_STEER_MALFORMED;
  if (buf[0] & 0x80) {
    if (len < 6) return QS_STEER_MALFORMED;
    qs_u32 dcid_len = buf[5];
    if (dcid_len > QS_STEER_MAX_CID_LEN) return QS_STEER_MALFORMED;
    if (len < 6 + dcid_len) return QS_STEER_MALFORMED;
    return qs_steer_decode_cid(buf, 6, dcid_len, cfg, worker);
  }
  /* No fixed-bit check: peers may grease it (RFC 9287), ngtcp2 does by default. */
  if (cfg->cid_len > QS_STEER_MAX_CID_LEN) return QS_STEER_MALFORMED;
  if (len < 1 + (qs_u32)cfg->cid_len) return QS_STEER_MALFORMED;
  return qs_steer_decode_cid(buf, 1, cfg->cid_len, cfg, worker);
}

/* 1 when the payload starts a QUIC v1 Initial (long header, version 1, type 0). */
QS_INLINE int qs_steer_is_v1_initial(const qs_u8 *buf, qs_u32 len) {
  if (len < 7) return 0;
  if ((buf[0] & 0xb0) != 0x80) return 0; /* long header, type bits 00 */
  return buf[1] == 0 && buf[2] == 0 && buf[3] == 0 && buf[4] == 1;
}

/* Gate mode: the worker for a datagram whose DCID is not ours (a client-chosen DCID: first
 * Initial without a gate, 0-RTT). FNV-1a over the long-header DCID, so that every packet
 * with that DCID reaches the same worker; the gate forwards NEW_TOKEN Initials by the same
 * function. 0 for anything that is not a long header with a DCID. */
QS_INLINE qs_u32 qs_steer_dcid_worker(const qs_u8 *buf, qs_u32 len, qs_u32 worker_count) {
  qs_u32 h = 2166136261u;
  if (worker_count == 0 || len < 6 || !(buf[0] & 0x80)) return 0;
  qs_u32 dcid_len = buf[5];
  if (dcid_len > QS_STEER_MAX_CID_LEN || len < 6 + dcid_len) return 0;
  for (qs_u32 i = 0; i < QS_STEER_MAX_CID_LEN; i++) {
    if (i >= dcid_len) break;
    h ^= buf[(6 + i) & (QS_STEER_BUF_LEN - 1)];
    h *= 16777619u;
  }
  h ^= h >> 16; /* FNV's low bits only see the inputs' low bits: fold the high ones in */
  h *= 0x45d9f3bu;
  h ^= h >> 16;
  return h % worker_count;
}

#endif /* QS_STEERING_SHARED_H */
