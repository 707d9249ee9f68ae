#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (only they and the libraries they link) and runs
# each for SECONDS (default 20) over its seed corpus in tests/fuzz/corpus/<parser>/, as
# many at a time as there are cores. Fails on any crash, leak or timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
jobs=$(nproc)

targets=()
for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
source scripts/ccache.sh
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQS_FUZZ=ON -DQS_TESTS=OFF -DQS_BENCH=OFF "${qs_launcher[@]}" >/dev/null
cmake --build build/fuzz -j "$jobs" --target "${targets[@]}"

# One target: its log in build/fuzz/<name>.log, its exit status in build/fuzz/<name>.status.
fuzz_one() {
  local name=$1 seeds="tests/fuzz/corpus/${1#fuzz_}" work="build/fuzz/corpus/${1#fuzz_}"
  mkdir -p "$work"
  [[ -d $seeds ]] && cp -n "$seeds"/* "$work"/ 2>/dev/null || true
  local rc=0
  build/fuzz/tests/fuzz/"$name" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/"$name"- "$work" \
    >build/fuzz/"$name".log 2>&1 || rc=$?
  echo "$rc" >build/fuzz/"$name".status
}

mkdir -p build/fuzz/artifacts
echo "-- ${#targets[@]} targets for ${seconds}s each, $jobs at a time"
for name in "${targets[@]}"; do
  rm -f build/fuzz/"$name".status
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  fuzz_one "$name" &
done
wait

status=0
for name in "${targets[@]}"; do
  if [[ "$(cat build/fuzz/"$name".status 2>/dev/null)" != 0 ]]; then
    echo "FAIL: $name (log: build/fuzz/$name.log)"
    tail -30 build/fuzz/"$name".log
    status=1
  else
    echo "$name: $(grep -E -o "stat::number_of_executed_units: *[0-9]+" build/fuzz/"$name".log)"
  fi
done
if [[ $status -eq 0 ]]; then echo "fuzz: all targets clean"; fi
exit $status
