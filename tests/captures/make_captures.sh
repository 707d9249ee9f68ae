#!/usr/bin/env bash
# make_captures.sh — make the real-packet captures in tests/data/.
#
# Run as root:  tests/captures/make_captures.sh [CAPTURE...]
#   CAPTURE is one or more of: chromium_quic chromium_quic_v6 gtlsclient_quic
#   gtlsclient_quic_v6 chromium_tls_tcp dns   (default: all of them).
#   OUT_DIR=/some/dir overrides the output folder (default: tests/data/).
#
# Two network namespaces (qs-cap-client, qs-cap-server) joined by one veth pair,
# addressed only from 198.18.0.0/15 and 2001:db8::/32 and with no other route, so no
# lab packet can go anywhere else. Offloads are off on the veth, so each captured
# frame is one wire packet with correct checksums. Servers: Debian's gtlsserver
# (QUIC, UDP 443), `openssl s_server -www` (TLS, TCP 443), dnsmasq (DNS, port 53).
# Clients: chromium-headless-shell, gtlsclient, dns_queries.py. tcpdump captures
# on the client's veth (Ethernet, DLT_EN10MB), filter `udp or tcp`.
# After the captures, describe_captures.py writes tests/data/README.md from tshark.
#
# Idempotent: it removes what an earlier, interrupted run left (its own namespaces
# and the processes inside them) before it starts, and everything it starts on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${OUT_DIR:-$REPO/tests/data}
PY=/usr/bin/python3

NS_C=qs-cap-client
NS_S=qs-cap-server
IF_C=qs-cap-c            # in NS_C
IF_S=qs-cap-s            # in NS_S
MAC_C=02:00:c6:12:c8:01
MAC_S=02:00:c6:12:c8:02
C4=198.18.200.1
S4=198.18.200.2
C6=2001:db8:200::1
S6=2001:db8:200::2
OPEN4=198.18.201.80      # answer for *.open.test (never contacted)
OPEN6=2001:db8:201::80

ALL_CAPTURES=(chromium_quic chromium_quic_v6 gtlsclient_quic gtlsclient_quic_v6 chromium_tls_tcp dns)
CAPTURES=("$@")
[[ ${#CAPTURES[@]} -gt 0 ]] || CAPTURES=("${ALL_CAPTURES[@]}")

log() { printf '[make_captures %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root"
for c in "${CAPTURES[@]}"; do
  [[ " ${ALL_CAPTURES[*]} " == *" $c "* ]] || die "unknown capture '$c' (known: ${ALL_CAPTURES[*]})"
done

CHROME=""
for p in /usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/headless_shell \
         "$(command -v chromium-headless-shell || true)"; do
  if [[ -n $p && -x $p ]]; then CHROME=$p; break; fi
done
for tool in gtlsserver gtlsclient tcpdump tshark openssl dnsmasq ss timeout flock; do
  command -v "$tool" >/dev/null || die "missing $tool"
done
[[ -n $CHROME ]] || die "chromium-headless-shell not found"

# ---------------------------------------------------------------------------------
# Cleanup: our processes by PID, then anything still inside our namespaces (by PID,
# from `ip netns pids`: Chromium's helpers), then the namespaces by name.
PIDS=()
WORK=""
LOCKED=0

kill_pids() {   # kill_pids PID... : TERM, wait up to 3 s, then KILL
  local pid alive=() _
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; alive+=("$pid"); fi
  done
  for _ in $(seq 30); do
    local left=()
    for pid in "${alive[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
    [[ ${#left[@]} -eq 0 ]] && return 0
    sleep 0.1
  done
  for pid in "${alive[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

remove_lab() {
  local ns
  for ns in "$NS_C" "$NS_S"; do
    if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
      local inside
      mapfile -t inside < <(ip netns pids "$ns" 2>/dev/null || true)
      [[ ${#inside[@]} -gt 0 ]] && kill_pids "${inside[@]}"
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
}

cleanup() {
  local rc=$?
  set +e
  [[ ${#PIDS[@]} -gt 0 ]] && kill_pids "${PIDS[@]}"
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  if [[ $LOCKED == 1 ]]; then   # never tear down another run's lab
    remove_lab
    [[ -n $WORK && -d $WORK ]] && rm -rf "$WORK"
  fi
  if [[ $rc -eq 0 ]]; then log "done"; else log "failed (exit $rc); cleaned up"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One run at a time (a second run would tear down the first one's namespaces).
exec 9<"${BASH_SOURCE[0]}"
flock -n 9 || die "another make_captures.sh is running"
LOCKED=1

START=$(date +%s)
# What an interrupted earlier run (kill -9, power cut) may have left: processes in our
# namespaces, the namespaces, the work dir. The work dir has a fixed name for that reason.
remove_lab
rm -rf /tmp/qs-cap-work
mkdir -m 700 /tmp/qs-cap-work   # fails if something re-created it meanwhile
WORK=/tmp/qs-cap-work
mkdir -p "$OUT" "$WORK/htdocs" "$WORK/pcap" "$WORK/home"

# ---------------------------------------------------------------------------------
log "namespaces $NS_C ($C4, $C6) <-> $NS_S ($S4, $S6)"
ip netns add "$NS_C"
ip netns add "$NS_S"
ip link add "$IF_C" netns "$NS_C" address "$MAC_C" type veth \
  peer name "$IF_S" netns "$NS_S" address "$MAC_S"
for side in "$NS_C $IF_C $C4 $C6" "$NS_S $IF_S $S4 $S6"; do
  read -r ns ifc a4 a6 <<<"$side"
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.accept_ra=0" "net.ipv6.conf.$ifc.router_solicitations=0"
  ip netns exec "$ns" "$PY" "$HERE/veth_offloads_off.py" "$ifc" >/dev/null
  ip -n "$ns" addr add "$a4/24" dev "$ifc"
  ip -n "$ns" -6 addr add "$a6/64" dev "$ifc" nodad
  ip -n "$ns" link set "$ifc" up
done
# The only routes are the two connected /24 and /64 (and link-local): nothing else is reachable.
ip netns exec "$NS_C" ping -q -c 1 -W 2 "$S4" >/dev/null || die "no IPv4 between namespaces"

# ---------------------------------------------------------------------------------
log "certificate (ECDSA P-256, SAN localhost, blocked.test, www.blocked.test)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 2 -subj "/CN=blocked.test" \
  -addext "subjectAltName=DNS:localhost,DNS:blocked.test,DNS:www.blocked.test" 2>/dev/null
SPKI=$(openssl x509 -in "$WORK/cert.pem" -pubkey -noout | openssl pkey -pubin -outform der |
       openssl dgst -sha256 -binary | base64)

cat >"$WORK/htdocs/index.html" <<'EOF'
<!DOCTYPE html>
<html><head><title>QUICstep capture</title></head>
<body><p id="marker">QUICstep test page served by gtlsserver</p></body></html>
EOF

wait_listen() {   # wait_listen NS PROTO(u|t) PORT PID
  local _
  for _ in $(seq 100); do
    kill -0 "$4" 2>/dev/null || die "server (pid $4) exited early"
    ip netns exec "$1" ss -Hln"$2" "sport = :$3" | grep -q . && return 0
    sleep 0.1
  done
  die "nothing listening on $2 port $3 in $1"
}

start_bg() {      # start_bg LOGNAME NS CMD... ; sets BG_PID
  ip netns exec "$2" "${@:3}" >"$WORK/$1.log" 2>&1 &
  BG_PID=$!
  PIDS+=("$BG_PID")
}

stop_pid() {      # stop_pid PID [SIGNAL]
  kill -"${2:-TERM}" "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

CAP_PID=""
CAP_FILE=""
start_capture() { # start_capture NAME
  CAP_FILE="$WORK/pcap/$1.pcap"
  ip netns exec "$NS_C" tcpdump -i "$IF_C" -U -s 0 -Z root -w "$CAP_FILE" 'udp or tcp' \
    >"$WORK/tcpdump-$1.log" 2>&1 &
  CAP_PID=$!
  PIDS+=("$CAP_PID")
  local _
  for _ in $(seq 100); do
    grep -q "listening on" "$WORK/tcpdump-$1.log" && return 0
    kill -0 "$CAP_PID" 2>/dev/null || die "tcpdump failed: $(cat "$WORK/tcpdump-$1.log")"
    sleep 0.1
  done
  die "tcpdump did not start"
}

stop_capture() {  # stop_capture NAME : let the last packets arrive, stop, check
  sleep 1
  stop_pid "$CAP_PID" INT
  CAP_PID=""
  local n
  n=$(tcpdump -r "$CAP_FILE" 2>/dev/null | wc -l)
  [[ $n -gt 0 ]] || die "$1: empty capture"
  # Keep files small: at most MAX_PACKETS packets.
  if [[ $n -gt ${MAX_PACKETS:-200} ]]; then
    tcpdump -r "$CAP_FILE" -w "$CAP_FILE.cut" -c "${MAX_PACKETS:-200}" 2>/dev/null
    mv "$CAP_FILE.cut" "$CAP_FILE"
  fi
  log "$1.pcap: $(tcpdump -r "$CAP_FILE" 2>/dev/null | wc -l) packets, $(stat -c %s "$CAP_FILE") bytes"
}

chromium() {      # chromium NAME URL FLAGS... : load URL in the client namespace, print the DOM
  local name=$1 url=$2
  shift 2
  mkdir -p "$WORK/chrome-$name"
  ip netns exec "$NS_C" env HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" \
      XDG_CACHE_HOME="$WORK/home/.cache" \
    timeout -k 5 90 "$CHROME" --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --disable-breakpad --user-data-dir="$WORK/chrome-$name" \
      --ignore-certificate-errors-spki-list="$SPKI" "$@" --dump-dom "$url" \
      >"$WORK/$name.dom" 2>"$WORK/$name.chrome.log" ||
    die "$name: chromium failed: $(tail -5 "$WORK/$name.chrome.log")"
}

want() { [[ " ${CAPTURES[*]} " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------------
if want chromium_quic || want chromium_quic_v6 || want gtlsclient_quic || want gtlsclient_quic_v6; then
  log "gtlsserver on UDP 443"
  start_bg gtlsserver "$NS_S" gtlsserver --quiet --htdocs="$WORK/htdocs" '*' 443 \
    "$WORK/key.pem" "$WORK/cert.pem"
  GTLS_PID=$BG_PID
  wait_listen "$NS_S" u 443 "$GTLS_PID"

  for v in 4 6; do
    name=chromium_quic_blocked; dest=$S4
    [[ $v == 6 ]] && { name=chromium_quic_blocked_v6; dest="[$S6]"; }
    want "chromium_quic$([[ $v == 6 ]] && echo _v6)" || continue
    log "$name: chromium-headless-shell, QUIC, https://blocked.test/ -> $dest"
    start_capture "$name"
    chromium "$name" https://blocked.test/ --enable-quic --origin-to-force-quic-on=blocked.test:443 \
      --host-resolver-rules="MAP blocked.test $dest"
    stop_capture "$name"
    grep -q "QUICstep test page" "$WORK/$name.dom" || die "$name: page not loaded: $(tail -5 "$WORK/$name.chrome.log")"
    # The point of this capture: tshark (decrypting the Initials) finds SNI blocked.test in a
    # ClientHello that it could only complete after the first datagram.
    read -r ch_frame ch_sni < <(tshark -n -r "$CAP_FILE" -Y "tls.handshake.type == 1" -T fields \
      -e frame.number -e tls.handshake.extensions_server_name 2>/dev/null | head -1) || true
    [[ ${ch_sni:-} == blocked.test ]] || die "$name: tshark finds no SNI blocked.test"
    [[ ${ch_frame:-1} -gt 1 ]] || die "$name: ClientHello fits in the first datagram"
    log "$name: ClientHello with SNI $ch_sni completed in frame $ch_frame"
  done

  for v in 4 6; do
    name=gtlsclient_quic; dest=$S4; uri="https://blocked.test/index.html"
    dcid=5155494373746570; scid=67746c73636c6e74           # "QUICstep", "gtlsclnt"
    [[ $v == 6 ]] && { name=gtlsclient_quic_v6; dest=$S6; dcid=5155494373747036; scid=67746c73636c7436; }
    want "$name" || continue
    log "$name: gtlsclient -> $dest, --sni=blocked.test, DCID $dcid"
    mkdir -p "$WORK/dl-$name"
    start_capture "$name"
    ip netns exec "$NS_C" timeout -k 5 30 gtlsclient --quiet --exit-on-all-streams-close \
      --sni=blocked.test --dcid="$dcid" --scid="$scid" --download="$WORK/dl-$name" \
      "$dest" 443 "$uri" >"$WORK/$name.log" 2>&1 || die "$name: gtlsclient failed: $(tail -5 "$WORK/$name.log")"
    stop_capture "$name"
    grep -q "QUICstep test page" "$WORK/dl-$name/index.html" || die "$name: page not downloaded"
  done
  stop_pid "$GTLS_PID"
fi

if want chromium_tls_tcp; then
  log "chromium_tls_tcp_blocked: chromium-headless-shell, TLS over TCP, https://blocked.test/ -> $S4"
  start_bg s_server "$NS_S" openssl s_server -accept 443 -cert "$WORK/cert.pem" -key "$WORK/key.pem" -www
  SSRV_PID=$BG_PID
  wait_listen "$NS_S" t 443 "$SSRV_PID"
  start_capture chromium_tls_tcp_blocked
  chromium chromium_tls_tcp_blocked https://blocked.test/ --disable-quic \
    --host-resolver-rules="MAP blocked.test $S4"
  stop_capture chromium_tls_tcp_blocked
  grep -q "s_server" "$WORK/chromium_tls_tcp_blocked.dom" || die "TLS page not loaded"
  stop_pid "$SSRV_PID"
fi

if want dns; then
  log "dns_queries: dnsmasq in $NS_S, queries over UDP and TCP, IPv4 and IPv6"
  start_bg dnsmasq "$NS_S" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
    --no-poll --user=root --pid-file= --bind-interfaces --listen-address="$S4" --listen-address="$S6" \
    --address="/blocked.test/$S4" --address="/blocked.test/$S6" \
    --address="/open.test/$OPEN4" --address="/open.test/$OPEN6" --log-queries --log-facility=-
  DNS_PID=$BG_PID
  wait_listen "$NS_S" u 53 "$DNS_PID"
  wait_listen "$NS_S" t 53 "$DNS_PID"
  start_capture dns_queries
  ip netns exec "$NS_C" "$PY" "$HERE/dns_queries.py" "$S4" "$S6" >"$WORK/dns.log" 2>&1 ||
    die "dns queries failed: $(cat "$WORK/dns.log")"
  stop_capture dns_queries
  stop_pid "$DNS_PID"
fi

# Only a run in which every capture worked replaces files in OUT.
log "captures took $(( $(date +%s) - START )) s; copying them to $OUT and writing README.md"
cp "$WORK"/pcap/*.pcap "$OUT"/
"$PY" "$HERE/describe_captures.py" "$OUT" "$HERE/make_captures.sh" >"$WORK/README.md"
cp "$WORK/README.md" "$OUT/README.md"
log "total $(( $(date +%s) - START )) s"
