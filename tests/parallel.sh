#!/usr/bin/env bash
# Runs the end-to-end test binaries, the emulator's own tests and the soak a few at a time
# (CDKD_TEST_JOBS, default 3), each with its own emulator, and prints one line per job.
# Most of an end-to-end test's time is spent waiting on the emulator and on timers (a load
# balancer `provisioning`, a killed run's lock), so running three at once on two cores takes about
# half the time of running them one after another (`cargo test --workspace` does that).
# A failed job's output is printed in full at the end and the script exits 1.
# Needs the workspace built (cargo build --workspace) and the emulator installed.
#   bash tests/parallel.sh [NAME ...]   (default: every e2e binary, the emulator tests and the soak)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
jobs=${CDKD_TEST_JOBS:-3}
logs="$repo/target/test-logs"
rm -rf "$logs"
mkdir -p "$logs"

# The e2e binaries, compiled now (cargo's own runner would then run them one at a time). The
# whole workspace is selected, as for the build before it, so the features cargo resolves are the
# same and nothing is compiled twice; only cdkd-tests' test targets are kept.
cargo test --workspace --no-run --message-format=json-render-diagnostics 2>/dev/null |
  .venv/bin/python -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if (m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]
            and "#cdkd-tests@" in m["package_id"]):
        print(m["target"]["name"], m["executable"])' >"$logs/binaries"

# The longest first, so they overlap with the many short ones instead of ending the run alone.
slow_first="pytest diff_truth lifecycle waf_cloudmap autoscaling restapi custom_resources soak export"
slow_first+=" exactly_once crash_recovery spec_rows wait_modes website analysis provider_round_trips fargate"
if [ $# -gt 0 ]; then
  wanted=("$@")
else
  mapfile -t all < <(cut -d' ' -f1 "$logs/binaries")
  wanted=()
  for name in $slow_first; do wanted+=("$name"); done
  for name in "${all[@]}"; do
    [[ " $slow_first " == *" $name "* ]] || wanted+=("$name")
  done
fi

run_one() {
  local name=$1 started status=0
  started=$EPOCHREALTIME
  case $name in
    pytest) .venv/bin/python -m pytest -q -p no:cacheprovider tests/emulator >"$logs/$name.log" 2>&1 || status=$? ;;
    # A bounded soak (2 rounds of each kind): no duplicate, leak or loss under throttling, 5xx,
    # lost answers, kill -9 and double Ctrl-C. `bash tests/soak/soak.sh 20` for more.
    soak) bash tests/soak/soak.sh 2 >"$logs/$name.log" 2>&1 || status=$? ;;
    *)
      local exe
      exe=$(awk -v n="$name" '$1 == n {print $2}' "$logs/binaries")
      if [ -z "$exe" ]; then
        echo "no e2e binary named $name (tests/e2e/$name.rs)" >"$logs/$name.log"
        status=2
      else
        # As cargo runs an integration test: from the package's folder.
        (cd tests && "$exe") >"$logs/$name.log" 2>&1 || status=$?
      fi
      ;;
  esac
  local seconds
  seconds=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')
  if [ "$status" = 0 ]; then
    printf 'ok      %-24s %6.1f s\n' "$name" "$seconds"
  else
    printf 'FAILED  %-24s %6.1f s (exit %s)\n' "$name" "$seconds" "$status"
    touch "$logs/$name.failed"
  fi
}
export -f run_one
export logs

started=$(date +%s)
printf '%s\n' "${wanted[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$1"' _ {}
echo "all jobs: $(($(date +%s) - started)) s with $jobs at a time"

failed=$(find "$logs" -name '*.failed' -printf '%f\n' | sed 's/\.failed$//' | sort)
if [ -n "$failed" ]; then
  for name in $failed; do
    echo
    echo "======== $name (target/test-logs/$name.log) ========"
    cat "$logs/$name.log"
  done
  echo
  echo "failed: $(echo $failed)"
  exit 1
fi
