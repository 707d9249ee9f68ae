#!/usr/bin/env bash
# Installs every Debian package QUICstep needs to build, test and run its lab.
# Idempotent and non-interactive; run as root on Debian bookworm.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "install.sh: must run as root (it installs Debian packages)" >&2
  exit 1
fi

packages=(
  # build
  build-essential cmake pkg-config ninja-build clang llvm libclang-rt-14-dev
  # the wire library and quicstep-inspect
  nettle-dev libgnutls28-dev libpcap-dev
  # command lines, config, logs, JSON, event loops
  libcli11-dev libtomlplusplus-dev libspdlog-dev nlohmann-json3-dev libboost-dev libsystemd-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # QUIC peers and libraries
  libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev ngtcp2-server ngtcp2-client
  chromium-headless-shell
  # the router and the lab
  libnetfilter-queue-dev libnetfilter-log-dev libmnl-dev libnftnl-dev nftables iptables iproute2 wireguard-tools wireguard-go
  libbpf-dev bpftool dnsmasq-base tcpdump tshark iperf3 openssl
  # the lab tests: ping and dig inside namespaces
  iputils-ping dnsutils
  # plots and the compose file check
  python3 python3-matplotlib docker-compose
  # the TUN engine's WireGuard helper (client/tun/wg_helper): Go 1.19 over Debian's
  # wireguard-go library, its arm64 build run under qemu-user in the tests
  golang-go golang-golang.zx2c4-wireguard-dev qemu-user-static
  # the Android app's plain Java (client/android), compiled and unit-tested without the SDK
  openjdk-17-jdk-headless junit5
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install.sh: all ${#packages[@]} packages present"
  exit 0
fi

echo "install.sh: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
