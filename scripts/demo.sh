#!/usr/bin/env bash
# The main job: installs what is missing, builds (release), brings up the lab, and fetches
# open.test and blocked.test natively, through a full VPN and through quicstepd, with the
# censor on; prints the table and brings everything down. Options go to the demo
# (lab/demo.py; `scripts/demo.sh --help` lists them).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install.sh >/dev/null
echo "== build (release)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQS_STATIC_ENGINE=OFF >/dev/null
if ! cmake --build build/release -j "$(nproc)" >build/release-build.log 2>&1; then
  tail -40 build/release-build.log
  echo "demo: build failed (whole log: build/release-build.log)" >&2
  exit 1
fi
export QS_BUILD=$PWD/build/release
exec python3 -m lab.demo "$@"
