#!/usr/bin/env bash
# Runs conformance scenarios: the official @azure/cosmos SDK (pinned in
# package.json / package-lock.json) against a fresh `georoute emulator` per
# scenario, everything on 127.0.0.1 with ephemeral ports.
#
# usage: run.sh --georoute=PATH --work=DIR [--keep-going] SCENARIO...
#   --georoute  the georoute binary (cmake --build <dir> --target georoute)
#   --work      where package.json, the lock, node_modules and a copy of the
#               scripts go (never the source tree); reused across runs
#   SCENARIO    a name from scenarios/ (discovery, crud, ...) or "all"
#
# Exit status: 0 every scenario passed; 1 a scenario failed or the set-up is
# broken; 77 (ctest's SKIP_RETURN_CODE) node/npm missing or too old, or the
# npm registry unreachable -- with the reason on stdout.
#
# Each scenario: start the emulator (stdout to a log, endpoints parsed from
# its banner), run `timeout -k 5 $NODE_TIMEOUT node scenarios/X.mjs`, send the
# emulator SIGTERM and wait. The emulator itself runs under `timeout` as a
# backstop, and an EXIT trap stops it if this script is interrupted.

set -u
set -o pipefail

SKIP=77
NODE_TIMEOUT=${GEOROUTE_CONFORMANCE_NODE_TIMEOUT:-60}
# Backstop lifetime of an emulator if this script dies without its trap.
EMULATOR_LIFETIME=$((NODE_TIMEOUT + 40))
SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

georoute=""
work=""
keep_going=0
scenarios=()
for arg in "$@"; do
  case "$arg" in
    --georoute=*) georoute=${arg#*=} ;;
    --work=*) work=${arg#*=} ;;
    --keep-going) keep_going=1 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option '$arg' (see --help)" >&2; exit 1 ;;
    *) scenarios+=("$arg") ;;
  esac
done
if [[ -z "$georoute" || -z "$work" || ${#scenarios[@]} -eq 0 ]]; then
  echo "run.sh: need --georoute=PATH, --work=DIR and at least one scenario (see --help)" >&2
  exit 1
fi
if [[ " ${scenarios[*]} " == *" all "* ]]; then
  scenarios=()
  for f in "$SOURCE_DIR"/scenarios/*.mjs; do
    scenarios+=("$(basename "$f" .mjs)")
  done
fi
for s in "${scenarios[@]}"; do
  if [[ ! -f "$SOURCE_DIR/scenarios/$s.mjs" ]]; then
    echo "run.sh: no scenario '$s' (have: $(cd "$SOURCE_DIR/scenarios" && ls *.mjs | sed 's/\.mjs$//' | tr '\n' ' '))" >&2
    exit 1
  fi
done

# -- prerequisites -------------------------------------------------------------

skip() {
  echo "SKIP: $*"
  exit "$SKIP"
}

command -v node >/dev/null 2>&1 || skip "node is not installed (the conformance suite drives the Node.js SDK @azure/cosmos)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (needed to install @azure/cosmos from package-lock.json)"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || skip "node does not run"
if [[ ! "$node_major" =~ ^[0-9]+$ ]] || (( node_major < 20 )); then
  skip "node $(node --version 2>/dev/null) is too old: @azure/cosmos 4.9.3 needs Node >= 20"
fi
for tool in timeout flock sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: '$tool' is missing (coreutils/util-linux)" >&2; exit 1; }
done
if [[ ! -x "$georoute" ]]; then
  echo "run.sh: no georoute binary at '$georoute': build it with 'cmake --build <dir> --target georoute'" >&2
  exit 1
fi

# -- install (once per lock, shared by concurrent ctest runs) --------------------

# Copies $1 to $2 only if it differs, through a temporary file, so that a
# scenario running concurrently never reads a half-written script.
copy_if_changed() {
  if ! cmp -s "$1" "$2"; then
    cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
  fi
}

is_network_failure() {
  grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ESOCKETTIMEDOUT|network request to|FetchError|request to https?://[^ ]* failed|code E50[234]|getaddrinfo|socket hang up|self.signed certificate|UNABLE_TO_GET_ISSUER_CERT|unable to verify' "$1"
}

install() {
  mkdir -p "$work/lib" "$work/scenarios" || return 1
  local stamp_want stamp_file="$work/node_modules/.georoute-conformance.stamp"
  stamp_want=$(cat "$SOURCE_DIR/package.json" "$SOURCE_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_want" \
        && -f "$work/node_modules/@azure/cosmos/package.json" ]]; then
    :
  else
    cp "$SOURCE_DIR/package.json" "$SOURCE_DIR/package-lock.json" "$work/" || return 1
    echo "installing @azure/cosmos into $work (npm ci)"
    if ! (cd "$work" && npm ci --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 \
            --fetch-retry-mintimeout=1000 --fetch-retry-maxtimeout=5000) >"$work/npm-ci.log" 2>&1; then
      tail -n 25 "$work/npm-ci.log"
      if is_network_failure "$work/npm-ci.log"; then
        echo "SKIP: the npm registry is unreachable, so @azure/cosmos cannot be installed (npm ci failed; log: $work/npm-ci.log)"
        return "$SKIP"
      fi
      echo "run.sh: npm ci failed in $work (log: $work/npm-ci.log)" >&2
      return 1
    fi
    echo "$stamp_want" >"$stamp_file"
  fi
  local f
  for f in "$SOURCE_DIR"/lib/*.mjs; do copy_if_changed "$f" "$work/lib/$(basename "$f")" || return 1; done
  for f in "$SOURCE_DIR"/scenarios/*.mjs; do copy_if_changed "$f" "$work/scenarios/$(basename "$f")" || return 1; done
}

mkdir -p "$work" || { echo "run.sh: cannot create '$work'" >&2; exit 1; }
exec 9>"$work/.install.lock"
if ! flock -w 100 9; then
  echo "run.sh: gave up waiting 100 s for another run's install in $work" >&2
  exit 1
fi
install
rc=$?
flock -u 9
exec 9>&-
(( rc == 0 )) || exit "$rc"

# -- one scenario ----------------------------------------------------------------

emulator_pid=""
emulator_log=""
node_pid=""

cleanup() {
  if [[ -n "$node_pid" ]]; then
    # `timeout` passes the signal on to node (and kills it 5 s later).
    kill -TERM "$node_pid" 2>/dev/null
    wait "$node_pid" 2>/dev/null
    node_pid=""
  fi
  stop_emulator
}

stop_emulator() {
  [[ -n "$emulator_pid" ]] || return 0
  # $emulator_pid is the `timeout` wrapper: it passes SIGTERM on to the
  # emulator and sends SIGKILL 5 s later if the emulator is still there.
  if kill -0 "$emulator_pid" 2>/dev/null; then
    kill -TERM "$emulator_pid" 2>/dev/null
    local i
    for ((i = 0; i < 100; i++)); do
      kill -0 "$emulator_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$emulator_pid" 2>/dev/null; then
      echo "run.sh: the emulator's timeout wrapper (pid $emulator_pid) is still there after 10 s; killing it" >&2
      kill -KILL "$emulator_pid" 2>/dev/null
    fi
  fi
  wait "$emulator_pid" 2>/dev/null
  emulator_pid=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The emulator flags a scenario asks for: its `// emulator-args:` line, split
# like shell words (quotes allowed, no expansion).
scenario_args() {
  local line
  line=$(grep -m1 '^// emulator-args:' "$1" | sed 's#^// emulator-args:##')
  [[ -n "${line// /}" ]] || return 0
  printf '%s' "$line" | xargs -n1 printf '%s\n'
}

run_scenario() {
  local name=$1 script="$work/scenarios/$1.mjs"
  local -a args
  mapfile -t args < <(scenario_args "$script")
  # One ephemeral port per region; the global endpoint too.
  local regions="West US,East US,North Europe" a
  for a in "${args[@]}"; do
    [[ "$a" == --regions=* ]] && regions=${a#--regions=}
  done
  local ports n i
  n=$(awk -F, '{print NF}' <<<"$regions")
  ports=0
  for ((i = 1; i < n; i++)); do ports+=",0"; done

  # A new file per run: concurrent runs of one scenario must not share it,
  # and the polling below must never read an earlier run's banner. Kept
  # only when the scenario fails.
  mkdir -p "$work/logs" || return 1
  emulator_log=$(mktemp "$work/logs/$name.emulator.XXXXXX") || return 1
  echo "== $name: georoute emulator ${args[*]} --ports=$ports --global-port=0"
  timeout -k 5 "$EMULATOR_LIFETIME" "$georoute" emulator "${args[@]}" --ports="$ports" --global-port=0 \
    >"$emulator_log" 2>&1 &
  emulator_pid=$!

  local global="" key="" tries
  for ((tries = 0; tries < 100; tries++)); do
    if grep -q '^stop with' "$emulator_log" 2>/dev/null; then break; fi
    if ! kill -0 "$emulator_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  global=$(sed -n 's/^ *global endpoint: *\(http:[^ ]*\).*/\1/p' "$emulator_log" | head -n1)
  key=$(sed -n 's/^ *key (the well-known emulator key): *\([^ ]*\).*/\1/p' "$emulator_log" | head -n1)
  if [[ -z "$key" ]]; then
    for a in "${args[@]}"; do [[ "$a" == --key=* ]] && key=${a#--key=}; done
  fi
  if [[ -z "$global" || -z "$key" ]]; then
    echo "FAIL $name: the emulator did not start (no endpoint/key in its banner); its output ($emulator_log):"
    cat "$emulator_log"
    stop_emulator
    return 1
  fi
  sed 's/^/   | /' "$emulator_log" | grep -v 'key (the well-known'

  # In the background and waited for, so that a SIGTERM to this script runs
  # its trap at once (bash defers traps while a foreground child runs).
  local rc
  (cd "$work" && NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
     exec timeout -k 5 "$NODE_TIMEOUT" node "scenarios/$name.mjs" --endpoint="$global" --key="$key") &
  node_pid=$!
  wait "$node_pid"
  rc=$?
  node_pid=""
  if (( rc == 124 || rc == 137 )); then
    echo "FAIL $name: node did not finish within ${NODE_TIMEOUT} s (killed by the external timer)"
  fi
  if ! kill -0 "$emulator_pid" 2>/dev/null; then
    echo "FAIL $name: the emulator exited during the scenario; its output:"
    cat "$emulator_log"
    rc=1
  fi
  stop_emulator
  if ! grep -q 'georoute emulator: stopped' "$emulator_log"; then
    echo "FAIL $name: the emulator did not report a clean shutdown on SIGTERM; its last lines:"
    tail -n 5 "$emulator_log"
    rc=$(( rc == 0 ? 1 : rc ))
  fi
  if (( rc == 0 )); then
    rm -f "$emulator_log"
  else
    echo "(emulator log: $emulator_log)"
  fi
  return "$rc"
}

passed=0
failed=0
failed_names=()
for s in "${scenarios[@]}"; do
  if run_scenario "$s"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_names+=("$s")
    (( keep_going )) || [[ ${#scenarios[@]} -eq 1 ]] || break
  fi
done
if (( ${#scenarios[@]} > 1 )); then
  echo "conformance: $passed passed, $failed failed${failed_names:+ (${failed_names[*]})}"
fi
(( failed == 0 ))
