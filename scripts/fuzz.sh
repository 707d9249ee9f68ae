#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for SECONDS (default 20) over its
# seed corpus in tests/fuzz/corpus/<parser>/. Fails on the first crash, leak or timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}

CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQS_FUZZ=ON -DQS_TESTS=OFF -DQS_BENCH=OFF >/dev/null
cmake --build build/fuzz -j "$(nproc)"

mkdir -p build/fuzz/artifacts
status=0
for bin in build/fuzz/tests/fuzz/fuzz_*; do
  [[ -x $bin ]] || continue
  name=$(basename "$bin")
  seeds="tests/fuzz/corpus/${name#fuzz_}"
  work="build/fuzz/corpus/${name#fuzz_}"
  mkdir -p "$work"
  [[ -d $seeds ]] && cp -n "$seeds"/* "$work"/ 2>/dev/null || true
  echo "-- $name for ${seconds}s"
  if ! "$bin" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix=build/fuzz/artifacts/"$name"- "$work" >build/fuzz/"$name".log 2>&1; then
    echo "FAIL: $name (log: build/fuzz/$name.log)"
    tail -30 build/fuzz/"$name".log
    status=1
  else
    grep -E "stat::number_of_executed_units" build/fuzz/"$name".log || true
  fi
done
if [[ $status -eq 0 ]]; then echo "fuzz: all targets clean"; fi
exit $status
