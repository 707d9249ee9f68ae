#!/usr/bin/env bash
# Installs every Debian package QUICstep needs to build, test and run its lab: the runtime,
# lab and packaging-test packages below, then the build dependencies, which are listed once,
# in debian/control (apt-get build-dep). Idempotent and non-interactive; run as root on
# Debian bookworm.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then
  echo "install.sh: must run as root (it installs Debian packages)" >&2
  exit 1
fi

packages=(
  # what reads debian/control (dpkg-checkbuilddeps) and builds packages
  dpkg-dev build-essential debhelper fakeroot
  # the test command's compiler cache (scripts/test.sh, scripts/fuzz.sh)
  ccache
  # QUIC peers for the lab: Debian's ngtcp2 example server and client
  ngtcp2-server ngtcp2-client
  chromium-headless-shell
  # a second browser and QUIC stack (Mozilla's neqo; UDP GSO), its certificate tool
  firefox-esr libnss3-tools
  # a third-party HTTP/3 server of another stack (Go, quic-go) that does not migrate
  caddy
  # the router and the lab
  nftables iptables iproute2 wireguard-tools wireguard-go
  dnsmasq-base tcpdump tshark iperf3 openssl
  # the tproxy channel's lab: two proxy stacks, each a server and its transparent-proxy
  # client (Shadowsocks in C; V2Ray's VMess in Go)
  shadowsocks-libev v2ray
  # the lab tests: ping and dig inside namespaces
  iputils-ping dnsutils
  # plots and the compose file check
  python3 python3-matplotlib docker-compose
  # the package test (tests/package): lint, man, systemd-analyze; the scanner's image
  lintian man-db systemd bash-completion mmdebstrap umoci podman runc uidmap
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

export DEBIAN_FRONTEND=noninteractive
updated=0
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install.sh: installing ${#missing[@]} packages: ${missing[*]}"
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -q
  updated=1
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  # The tests start their own lab servers. Services that these packages enable when systemd
  # runs (a web server on port 80, a Shadowsocks server) are disabled again, only when this
  # run installed them.
  if [[ -d /run/systemd/system ]]; then
    for p in "${missing[@]}"; do
      case $p in
        caddy | shadowsocks-libev) systemctl disable --now "$p.service" || true ;;
      esac
    done
  fi
fi

# The TUN engine for arm64 (cmake/StaticEngine.cmake): Debian's cross compiler and nettle
# for arm64 from the multiarch archive, which debian/control cannot name (no :arm64 there).
cross=(crossbuild-essential-arm64 nettle-dev:arm64)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install.sh: adding the arm64 architecture (multiarch) for the arm64 engine"
  dpkg --add-architecture arm64
  updated=0
fi
cross_missing=()
for p in "${cross[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    cross_missing+=("$p")
  fi
done
if [[ ${#cross_missing[@]} -gt 0 ]]; then
  echo "install.sh: installing ${cross_missing[*]}"
  [[ $updated -eq 1 ]] || apt-get update -q
  updated=1
  apt-get install -y -q --no-install-recommends "${cross_missing[@]}"
fi

# The build dependencies, every profile's (the tests' and fuzzers' too): debian/control.
if dpkg-checkbuilddeps debian/control 2>/dev/null; then
  echo "install.sh: all $((${#packages[@]} + ${#cross[@]})) packages and debian/control's build dependencies present"
  exit 0
fi
echo "install.sh: installing debian/control's missing build dependencies"
[[ $updated -eq 1 ]] || apt-get update -q
apt-get build-dep -y -q --no-install-recommends ./
dpkg-checkbuilddeps debian/control
