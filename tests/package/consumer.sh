#!/usr/bin/env bash
# Builds tests/examples as a project of its own against georoute, the way a
# host project would (tests/package/CMakeLists.txt registers both modes).
#
# usage: consumer.sh install|add_subdirectory --cmake=CMAKE --source=DIR
#          --build=DIR --config=CONFIG --work=DIR --georoute=PROGRAM
#          [--prefix-path=P1:P2] -- [cmake arguments for the consumer]
#
#   install           `cmake --install` of --build into WORK/prefix; configure
#                     tests/examples with -DCMAKE_PREFIX_PATH=WORK/prefix
#                     (find_package(georoute CONFIG REQUIRED)), build it, run
#                     it against `georoute emulator`
#   add_subdirectory  configure tests/package/subdir (add_subdirectory of
#                     --source, no GoogleTest, its own checks), compile the
#                     example and a warning probe; GEOROUTE_PACKAGE_FULL=1:
#                     build everything and run the example too
#
# Exit status 0 on success; 1 with the failing step's output otherwise.
set -u
set -o pipefail

mode=${1:-}
[ $# -gt 0 ] && shift
cmake=cmake source="" build="" config="" work="" georoute="" prefix_path=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cmake=*) cmake=${1#*=} ;;
    --source=*) source=${1#*=} ;;
    --build=*) build=${1#*=} ;;
    --config=*) config=${1#*=} ;;
    --work=*) work=${1#*=} ;;
    --georoute=*) georoute=${1#*=} ;;
    --prefix-path=*) prefix_path=${1#*=} ;;
    --) shift; break ;;
    *) echo "consumer.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
  shift
done
consumer_args=("$@")
if [[ "$mode" != install && "$mode" != add_subdirectory ]] ||
   [[ -z "$source" || -z "$build" || -z "$work" || -z "$georoute" ]]; then
  sed -n '4,7p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 1
fi

jobs=2
start=$(date +%s)
rm -rf "$work"
mkdir -p "$work"
log=$work/step.log

# step NAME COMMAND...: runs it with its output in $log; on failure prints
# the output and exits 1.
step() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  if ! "$@" >"$log" 2>&1; then
    echo "FAIL: $name: $*"
    sed 's/^/  | /' "$log" | tail -n 60
    exit 1
  fi
  echo "ok: $name ($(( $(date +%s) - t0 )) s)"
}

emulator_pid=""
stop_emulator() {
  [ -n "$emulator_pid" ] || return 0
  kill -TERM "$emulator_pid" 2>/dev/null
  wait "$emulator_pid" 2>/dev/null
  emulator_pid=""
}
trap stop_emulator EXIT

# run_example PROGRAM: the example against a fresh `georoute emulator` on
# ephemeral 127.0.0.1 ports (endpoint and key from its banner).
run_example() {
  local program=$1 emulator_log=$work/emulator.log global key i
  timeout -k 5 120 "$georoute" emulator --ports=0,0,0 --global-port=0 \
    >"$emulator_log" 2>&1 &
  emulator_pid=$!
  for i in $(seq 1 100); do
    grep -q '^stop with' "$emulator_log" 2>/dev/null && break
    kill -0 "$emulator_pid" 2>/dev/null || break
    sleep 0.1
  done
  global=$(sed -n 's/^ *global endpoint: *\(http:[^ ]*\).*/\1/p' "$emulator_log" | head -n1)
  key=$(sed -n 's/^ *key (the well-known emulator key): *\([^ ]*\).*/\1/p' "$emulator_log" | head -n1)
  if [[ -z "$global" || -z "$key" ]]; then
    echo "FAIL: georoute emulator did not start:"
    sed 's/^/  | /' "$emulator_log"
    exit 1
  fi
  GEOROUTE_ACCOUNT_KEY=$key step "run the example against $global" \
    timeout -k 5 120 "$program" "$global"
  sed 's/^/  | /' "$log"
  stop_emulator
}

prefix_list=${prefix_path//:/;}
case "$mode" in
  install)
    prefix=$work/prefix
    install_args=(--install "$build" --prefix "$prefix")
    [ -n "$config" ] && install_args+=(--config "$config")
    step "cmake --install into $prefix" "$cmake" "${install_args[@]}"
    # <libdir>/cmake/georoute: lib, lib64 or lib/<triplet> (GNUInstallDirs).
    cmake_dir=$(dirname "$(find "$prefix" -name georouteConfig.cmake | head -n1)")
    for f in "$cmake_dir/georouteConfig.cmake" \
             "$cmake_dir/georouteConfigVersion.cmake" \
             "$cmake_dir/georouteTargets.cmake" "$cmake_dir/FindCAF.cmake" \
             "$prefix/include/georoute/actors/engine.hpp" \
             "$prefix/include/georoute/actors/policy/model.hpp"; do
      [ -f "$f" ] || { echo "FAIL: the install has no $f"; exit 1; }
    done
    if grep -rn -e '-Werror' "$cmake_dir"; then
      echo "FAIL: the installed package carries -Werror (above)"
      exit 1
    fi
    step "configure tests/examples with find_package(georoute)" \
      "$cmake" -S "$source/tests/examples" -B "$work/build" \
      "-DCMAKE_PREFIX_PATH=$prefix${prefix_list:+;$prefix_list}" \
      "-DGEOROUTE_EXAMPLE_SHADOW_DIR=$source/tests/package/shadow" \
      "${consumer_args[@]}"
    step "build the example" "$cmake" --build "$work/build" -j "$jobs"
    run_example "$work/build/georoute_example_server"
    ;;
  add_subdirectory)
    args=(-S "$source/tests/package/subdir" -B "$work/build"
          -G "Unix Makefiles"
          "-DGEOROUTE_SOURCE_DIR=$source"
          "-DGEOROUTE_EXAMPLE_SHADOW_DIR=$source/tests/package/shadow"
          -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON)
    [ -n "$prefix_list" ] && args+=("-DCMAKE_PREFIX_PATH=$prefix_list")
    step "configure a parent project that add_subdirectory()s georoute" \
      "$cmake" "${args[@]}" "${consumer_args[@]}"
    if [ "${GEOROUTE_PACKAGE_FULL:-0}" = 1 ]; then
      step "build the parent project" "$cmake" --build "$work/build" -j "$jobs"
      run_example "$work/build/example/georoute_example_server"
    else
      step "compile the warning probe (no -Werror from georoute)" \
        make -C "$work/build" warning_probe.cpp.o
      step "compile the example against georoute::georoute" \
        make -C "$work/build/example" example_server.cpp.o
    fi
    ;;
esac
echo "package.${mode}_consumer: passed in $(( $(date +%s) - start )) s"
