#!/usr/bin/env bash
# The QUICstep demo: brings up the lab, starts quicstepd in the client, fetches a 10 MB
# file over HTTP/3 with Debian's gtlsclient from gtlsserver, and shows the native/channel
# split from quicstepctl and from captures on the censor's link and at the provider.
# Root; everything it starts is stopped by PID and the lab is taken down on exit.
#   scripts/quicstepd_demo.sh [BUILD_DIR]     (default build/release; built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
[[ $(id -u) -eq 0 ]] || { echo "quicstepd_demo.sh: run as root (network namespaces)" >&2; exit 1; }

if [[ ! -x $BUILD/client/quicstepd || ! -x $BUILD/measurement/quicstep-inspect ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j2 --target quicstepd quicstepctl quicstep-inspect qs_delay_line
fi
export QSLAB_DELAY_LINE=$PWD/$BUILD/lab/qs_delay_line
WORK=$(mktemp -d /tmp/quicstepd-demo.XXXXXX)
chmod 755 "$WORK"
pids=()
cleanup() {
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill -INT "${pids[i]}" 2>/dev/null || true; wait "${pids[i]}" 2>/dev/null || true; done
  lab/qslab down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== lab up (profile london-ohio: 76 ms to the provider and to the server)"
lab/qslab up --profile london-ohio
status=$(lab/qslab status --json)
j() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$status" "$1"; }
CLIENT=$(j 'd["client"]["netns"]'); WG=$(j 'd["client"]["channel"]["interface"]')
CENSOR=$(j 'd["censor"]["netns"]'); CENSOR_IF=$(j 'd["censor"]["client_interface"]')
PROV=$(j 'd["provider"]["netns"]'); PROV_IF=$(j 'd["provider"]["wg_interface"]')
SRV=$(j 'd["servers"][0]["netns"]')

mkdir -p "$WORK/htdocs" "$WORK/dl"
head -c 10000000 /dev/urandom >"$WORK/htdocs/10M.bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/key.pem" \
  -out "$WORK/cert.pem" -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost,DNS:open.test 2>/dev/null
ip netns exec "$SRV" gtlsserver --quiet --htdocs="$WORK/htdocs" '*' 443 "$WORK/key.pem" "$WORK/cert.pem" >/dev/null 2>&1 &
pids+=($!)
ip netns exec "$CENSOR" tcpdump -i "$CENSOR_IF" -w "$WORK/native.pcap" -U -B 65536 >/dev/null 2>&1 &
pids+=($!)
ip netns exec "$PROV" tcpdump -i "$PROV_IF" -w "$WORK/provider.pcap" -U -B 65536 >/dev/null 2>&1 &
pids+=($!)
printf '[daemon]\nchannel_interface = "%s"\n' "$WG" >"$WORK/quicstepd.toml"
echo "== quicstepd (channel $WG, nat addressing)"
ip netns exec "$CLIENT" "$BUILD/client/quicstepd" --config "$WORK/quicstepd.toml" \
  --control "$WORK/control.sock" --log-level debug 2>&1 | sed 's/^/  quicstepd: /' &
pids+=($!)
sleep 2
echo "== resolve open.test (DNS goes through the channel), then fetch 10 MB over HTTP/3"
addr=$(ip netns exec "$CLIENT" dig +short open.test A | head -1)
start=$(date +%s.%N)
ip netns exec "$CLIENT" gtlsclient --quiet --exit-on-all-streams-close --download="$WORK/dl" \
  "$addr" 443 https://open.test/10M.bin >/dev/null 2>&1
end=$(date +%s.%N)
printf '  fetched %s bytes in %.2f s\n' "$(stat -c %s "$WORK/dl/10M.bin")" "$(echo "$end - $start" | bc)"
echo "== quicstepctl status"
ip netns exec "$CLIENT" "$BUILD/client/quicstepctl" --socket "$WORK/control.sock" status
sleep 0.5
kill -INT "${pids[1]}" "${pids[2]}"; wait "${pids[1]}" "${pids[2]}" 2>/dev/null || true
echo "== what the censor saw on the client's link (quicstep-inspect --summary)"
"$BUILD/measurement/quicstep-inspect" --summary "$WORK/native.pcap" | sed 's/^/  /'
echo "== what went through the channel (at the provider)"
"$BUILD/measurement/quicstep-inspect" --summary "$WORK/provider.pcap" | sed 's/^/  /'
