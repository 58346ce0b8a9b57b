#!/usr/bin/env bash
# Builds CAF 0.17.6 -- the source of Debian 12's libcaf-dev -- instrumented
# with ThreadSanitizer, for `./run test --tsan` (tests/tsan/README.md).
#
#   tests/tsan/build-caf.sh PREFIX
#
# TSan sees a happens-before edge only where both sides are instrumented.
# Debian's libcaf_core.so is not: every message travels through its mailbox
# and scheduler queues (atomics compiled into the library), so against it TSan
# would report each hand-off between two actors as a race. This script
# downloads Debian's upstream tarball (deb.debian.org, the Debian registry),
# checks it against the SHA-256 that Debian's actor-framework_0.17.6-2.1.dsc
# lists, and builds libcaf_core and libcaf_io with -fsanitize=thread and
# Debian's configuration (log level QUIET, memory management and exceptions
# on: the defines of /usr/include/caf/detail/build_config.hpp). The headers it
# installs differ from /usr/include/caf only by the `#include <limits>` that
# Debian patches into receive_buffer.hpp (given here as -include limits;
# checked with diff -r).
# Nothing of it is committed; PREFIX is inside the build folder, and a
# finished PREFIX (PREFIX/.complete) is reused.
set -euo pipefail

prefix=${1:?usage: build-caf.sh PREFIX}
version=0.17.6
tarball=actor-framework_${version}.orig.tar.gz
sha256=e2bf5bd243f08bb7d8adde197cfe3e6d71314ed3378fe0692f8932f4c3b3928c
url=http://deb.debian.org/debian/pool/main/a/actor-framework/$tarball

log() { printf '[tsan-caf] %s\n' "$*" >&2; }

if [ -f "$prefix/.complete" ]; then
  exit 0
fi
work=$prefix.work
mkdir -p "$work"
if ! echo "$sha256  $work/$tarball" | sha256sum -c --status 2>/dev/null; then
  log "downloading $url"
  curl -fsS --retry 3 -o "$work/$tarball.part" "$url"
  mv "$work/$tarball.part" "$work/$tarball"
fi
if ! echo "$sha256  $work/$tarball" | sha256sum -c --status; then
  log "$tarball does not match the SHA-256 of Debian's .dsc ($sha256); refusing to build it"
  rm -f "$work/$tarball"
  exit 1
fi
rm -rf "$work/src" "$work/build"
mkdir -p "$work/src"
tar -xzf "$work/$tarball" -C "$work/src" --strip-components=1

# -include limits: libcaf_io/caf/io/network/receive_buffer.hpp uses
# std::numeric_limits without <limits>, which GCC 12's headers no longer pull
# in (Debian builds it with a patch to the same effect).
flags="-std=c++11 -O1 -g -fno-omit-frame-pointer -fsanitize=thread -include limits"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
log "building libcaf_core and libcaf_io with -fsanitize=thread (about 5 CPU minutes)"
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS=$flags" -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENSSL=yes \
  -DCAF_NO_TOOLS=yes -DCAF_NO_PYTHON=yes -DCAF_NO_OPENCL=yes \
  -DCAF_NO_SUMMARY=yes -DCMAKE_INSTALL_PREFIX="$prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/build" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
cmake --install "$work/build" >/dev/null
rm -rf "$work/src" "$work/build"
touch "$prefix/.complete"
log "installed in $prefix"
