#!/usr/bin/env bash
# The README's test command on a plain clone of this checkout's HEAD, in a fresh venv: its wall time and
# the CPU-seconds of everything it started, daemons included (docs/testing.md, "How long it takes").
#
#   benchmarks/suite_time.sh [--loops N] [--keep]
#
# --loops N  runs N CPU-bound loops (`sh -c 'while :; do :; done'`) beside the suite, all in one session
#            of their own, as loops in another tmux window are (Linux's scheduler shares the CPU between
#            sessions first: autogroups); they are stopped at the end.
# --keep     keeps the clone (printed); else it is removed, unless the run failed (its log is kept).
#
# CPU-seconds come from a cpuacct cgroup (v1) or a cgroup v2 directory when one can be made (root):
# it counts every process the run started, also those that left their parent (chromium, tmux servers,
# omnigent's host daemon). Without one, /usr/bin/time's user+sys, which misses those, is printed and
# said so. The venv sees the system's packages and installs the checkout with --no-deps: the test
# extras must already be installed (pip install -e '.[test]').
set -u
loops=0
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --loops) loops=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--loops N] [--keep]" >&2; exit 2 ;;
  esac
done
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel) || exit 2
work=$(mktemp -d /tmp/agyh-suite-time.XXXXXX)
git clone -q "$repo" "$work/agy-harness" || exit 2
cd "$work/agy-harness" || exit 2
# the test extras' commands the tests look for next to the venv's python (aat-verify): a venv that sees
# the system's packages does not see their scripts
scripts=$(for tool in aat-verify; do command -v "$tool"; done)
python -m venv --system-site-packages "$work/venv" && . "$work/venv/bin/activate" || exit 2
for script in $scripts; do ln -s "$script" "$work/venv/bin/"; done
pip install -q --no-deps --no-build-isolation -e . > "$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 2; }

loops_pid=""
if [ "$loops" -gt 0 ]; then  # one session for all of them, as one tmux window is
  setsid sh -c 'echo $$ > "$2"; for _ in $(seq 1 "$1"); do sh -c "while :; do :; done" & done; wait' \
    _ "$loops" "$work/loops.sid" &
  while [ ! -s "$work/loops.sid" ]; do sleep 0.1; done
  loops_pid=$(cat "$work/loops.sid")
fi
stop_loops() { [ -n "$loops_pid" ] && pkill -s "$loops_pid" 2> /dev/null; }
trap stop_loops EXIT

group=""
for base in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [ -w "$base" ] && mkdir "$base/agyh-suite-$$" 2> /dev/null; then group="$base/agyh-suite-$$"; break; fi
done
start=$(date +%s)
if [ -n "$group" ]; then
  bash -c 'echo $$ > "$1/cgroup.procs"; CI=true exec python -m pytest -q' _ "$group" > "$work/pytest.log" 2>&1
  rc=$?
  sleep 1
  if [ -f "$group/cpuacct.usage" ]; then
    cpu=$(awk '{printf "%.0f", $1 / 1e9}' "$group/cpuacct.usage")
  else
    cpu=$(awk '/^usage_usec/ {printf "%.0f", $2 / 1e6}' "$group/cpu.stat")
  fi
  how="every process it started"
  rmdir "$group" 2> /dev/null
else
  /usr/bin/time -f "%U %S" -o "$work/time.txt" env CI=true python -m pytest -q > "$work/pytest.log" 2>&1
  rc=$?
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$work/time.txt")
  how="user+sys of reaped processes only (no cgroup could be made: daemons not counted)"
fi
end=$(date +%s)
echo "$(git rev-parse --short HEAD): exit $rc, $((end - start)) s wall, $cpu CPU-s ($how), $loops loop(s) beside it"
echo "  $(tail -1 "$work/pytest.log")"
if [ "$keep" = 1 ] || [ "$rc" != 0 ]; then  # a failed run's log is kept to read
  echo "  kept: $work (its log: $work/pytest.log)"
else
  rm -rf "$work"
fi
exit "$rc"
