#!/usr/bin/env bash
# Installs what is missing, builds everything (ASan+UBSan, warnings as errors), runs every
# test (unit, lab integration as root), then each fuzz target for a bounded time.
# The one test command: README's Quick start and .ci/run call this and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install.sh

jobs=$(nproc)
echo "== build (ASan + UBSan, -Werror)"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DQS_SANITIZE=ON -DQS_WERROR=ON -DQS_BENCH=OFF >/dev/null
cmake --build build/asan -j "$jobs"

echo "== build (release: the tools the lab tests and the demo run)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQS_WERROR=ON >/dev/null
cmake --build build/release -j "$jobs"

echo "== tests"
ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== fuzz"
scripts/fuzz.sh "${QS_FUZZ_SECONDS:-20}"
