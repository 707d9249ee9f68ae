#!/usr/bin/env bash
# Installs what is missing, builds everything (ASan+UBSan, warnings as errors), runs every
# test (unit, lab integration as root) and, beside them at idle priority, each fuzz target
# for a bounded time: the lab tests, serial, leave about half of the machine idle, and the
# fuzzers take only that. A failing test does not hide a fuzzing regression, nor the other
# way round (the run fails on either). A failing lab test leaves its logs and captures in
# build/asan/test-artifacts.
# The one test command: README's Quick start and .ci/run call this and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install.sh

jobs=$(nproc)
# ccache keeps compiled objects outside the clone (root's ~/.cache/ccache), keyed by paths
# relative to the clone: a later run on this machine, in any clone, compiles only what
# changed. A first run pays a few percent for filling it.
source scripts/ccache.sh

echo "== build (ASan + UBSan, -Werror)"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DQS_SANITIZE=ON -DQS_WERROR=ON -DQS_BENCH=OFF \
  "${qs_launcher[@]}" >/dev/null
cmake --build build/asan -j "$jobs"

echo "== build (release: the lab's own tools)"
# The lab's delay line and censor run at release speed (their timing is the lab's); the
# tests run the ASan build of everything else. The product's release build is compiled by
# the package test (dpkg-buildpackage) and by scripts/demo.sh. (The static-pie engines are
# built once, in build/asan, whose tests run them.)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQS_WERROR=ON -DQS_STATIC_ENGINE=OFF \
  "${qs_launcher[@]}" >/dev/null
cmake --build build/release -j "$jobs" --target qs_delay_line censord

echo "== fuzz build and fuzzing, in the background at idle priority (log: build/fuzz.log)"
mkdir -p build
# Its own session and process group (setsid), so that a run cut short takes the fuzzers
# with it. A new session is a new scheduler autogroup, which the kernel weighs against the
# tests' as an equal whatever the nice value inside it: the autogroup is niced too.
setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null
                exec nice -n 19 ionice -c 3 scripts/fuzz.sh "$1"' fuzz "${QS_FUZZ_SECONDS:-20}" \
  >build/fuzz.log 2>&1 &
fuzz_pid=$!
trap 'kill -- -"$fuzz_pid" 2>/dev/null || true' EXIT

echo "== tests"
rm -rf build/asan/test-artifacts
tests=0
# One lab per machine (its namespaces have fixed names): another clone's test run or a flake
# hunt holding the lab is waited for, not fought. -o: the tests' children do not hold it.
lab_lock=/run/quicstep-lab-tests.lock
flock -n "$lab_lock" true || echo "test.sh: another lab test run holds $lab_lock; waiting for it"
flock -o "$lab_lock" ctest --test-dir build/asan --output-on-failure -j "$jobs" || tests=$?

echo "== fuzz (waiting for it to finish)"
fuzz=0
wait "$fuzz_pid" || fuzz=$?
grep -E "^(-- |FAIL|fuzz_|fuzz:)" build/fuzz.log || tail -n 30 build/fuzz.log

if [[ $tests -ne 0 || $fuzz -ne 0 ]]; then
  if [[ $tests -ne 0 ]]; then
    echo "test.sh: tests FAILED (ctest exit $tests); their assertions, again at the end:"
    grep -E -A4 '^(FAIL|ERROR): |^[A-Za-z]*Error: ' build/asan/Testing/Temporary/LastTest.log \
      | cut -c1-600 | tail -n 60 || true
  fi
  [[ $fuzz -ne 0 ]] && echo "test.sh: fuzzing FAILED (exit $fuzz; log: build/fuzz.log)"
  if [[ -d build/asan/test-artifacts ]]; then
    echo "test.sh: logs and captures of the failed tests: $PWD/build/asan/test-artifacts"
    ls -1 build/asan/test-artifacts
  fi
  exit 1
fi
command -v ccache >/dev/null && ccache --show-stats | grep -E "^(Cacheable calls|  Hits)" || true
echo "test.sh: all tests and fuzz targets passed"
