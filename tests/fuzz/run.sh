#!/usr/bin/env bash
# Runs one libFuzzer harness of tests/fuzz for a number of seconds:
#
#   ./run fuzz NAME SECONDS [libFuzzer flags...]     (or tests/fuzz/run.sh ...)
#   ./run fuzz list                                  the harness names
#
# Installs clang and libclang-rt-14-dev with apt-get when they are missing
# (as root, on Debian), configures build-fuzz/ next to build/ with clang and
# -DGEOROUTE_FUZZ=ON, builds georoute_fuzz_NAME only, copies the committed
# seed corpus (tests/fuzz/corpus/NAME, never written to) into
# build-fuzz/fuzz-work/NAME/corpus, where new interesting inputs accumulate
# from run to run, and runs the fuzzer there. Crashes land in
# build-fuzz/fuzz-work/NAME/artifacts/. At the end it prints the executions,
# the coverage (cov: edges, ft: features) and the corpus size.
#
# Environment: GEOROUTE_FUZZ_BUILD (build folder, default <repo>/build-fuzz),
# GEOROUTE_FUZZ_JOBS (build parallelism, default 2).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${GEOROUTE_FUZZ_BUILD:-$root/build-fuzz}
jobs=${GEOROUTE_FUZZ_JOBS:-2}

harnesses() {
  for f in "$here"/*_fuzz.cpp; do basename "$f" _fuzz.cpp; done
}

usage() {
  echo "usage: ./run fuzz NAME SECONDS [libFuzzer flags...]" >&2
  echo "harnesses: $(harnesses | tr '\n' ' ')" >&2
  exit 2
}

[[ ${1:-} == list ]] && { harnesses; exit 0; }
[[ $# -ge 2 ]] || usage
name=$1 seconds=$2
shift 2
[[ -f $here/${name}_fuzz.cpp ]] || { echo "unknown harness: $name" >&2; usage; }
[[ $seconds =~ ^[0-9]+$ ]] || { echo "SECONDS must be a number: $seconds" >&2; usage; }

# clang with the libFuzzer runtime (Debian 12: clang 14 + libclang-rt-14-dev).
have_toolchain() {
  command -v clang++ > /dev/null || return 1
  local rt
  rt=$(clang++ -print-runtime-dir 2> /dev/null) || return 1
  [[ -f $rt/libclang_rt.fuzzer-x86_64.a || -f $rt/libclang_rt.fuzzer.a ]]
}
if ! have_toolchain; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get > /dev/null; then
    echo "== installing clang libclang-rt-14-dev"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      clang libclang-rt-14-dev || {
      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends clang libclang-rt-14-dev
    }
  fi
  have_toolchain || {
    echo "clang with the libFuzzer runtime is missing:" \
      "apt-get install clang libclang-rt-14-dev" >&2
    exit 1
  }
fi

if ! grep -qs '^GEOROUTE_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "== configuring $build"
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DGEOROUTE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build.configure.log" 2>&1 || {
    cat "$build.configure.log" >&2
    exit 1
  }
fi
echo "== building georoute_fuzz_$name"
cmake --build "$build" --target "georoute_fuzz_$name" -j "$jobs"

work=$build/fuzz-work/$name
mkdir -p "$work/corpus" "$work/artifacts"
cp -f "$here/corpus/$name"/* "$work/corpus/"
dict=()
[[ -f $here/dict/$name.dict ]] && dict=("-dict=$here/dict/$name.dict")

echo "== fuzzing $name for ${seconds}s (corpus: $work/corpus)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
set +e
"$build/tests/fuzz/georoute_fuzz_$name" -max_total_time="$seconds" \
  -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" "${dict[@]}" "$@" "$work/corpus" \
  2>&1 | tee "$work/last.log"
status=${PIPESTATUS[0]}
set -e

echo "== $name: ${seconds}s, exit $status"
grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$work/last.log" | tail -1 || true
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
  "$work/last.log" || true
echo "corpus: $(find "$work/corpus" -type f | wc -l) files," \
  "$(du -sk "$work/corpus" | cut -f1) KiB"
crashes=$(find "$work/artifacts" -type f | wc -l)
echo "artifacts: $crashes in $work/artifacts"
exit "$status"
