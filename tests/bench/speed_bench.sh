#!/usr/bin/env bash
# The speed pass (issue 17), against a private emulator answering every request after 50 ms:
#  - the synthetic app (tests/fixtures/cdk.out/soak: 50 resources, SQS, SNS, SSM and IAM plugin
#    types): deploy, no-change deploy and destroy, with their targets;
#  - a wide stack (200 independent Cloud Control resources) with adaptive concurrency: wall time
#    against its bound, then under an injected rate limit (it must back off, not fail);
#  - 200 resources in chains of 20: wall time against the critical path.
# Each line prints the figure, the target or bound, and PASS/MISS.
# Usage: speed_bench.sh [release|debug] (default release; `cargo build --release --workspace`).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
source "$(dirname "$0")/emulator.sh"
profile=${1:-release}
cdkd="$repo/target/$profile/cdkd"
[ -x "$cdkd" ] || { echo "build it first: cargo build --$profile --workspace" >&2; exit 1; }
pin_bundled "$profile"
"$cdkd" --state-bucket bench-speed bootstrap --no-assets >/dev/null
verdict() { python3 -c "import sys; print('PASS' if float(sys.argv[1]) <= float(sys.argv[2]) else 'MISS')" "$1" "$2"; }
# The emulator's own round trip (latency plus moto's processing), the unit of every bound.
rtt=$(.venv/bin/python - "$endpoint" <<'PY'
import statistics, sys, time, boto3
from botocore.config import Config
cc = boto3.client("cloudcontrol", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t", config=Config(retries={"max_attempts": 1, "mode": "standard"}))
times = []
for _ in range(30):
    started = time.perf_counter()
    try:
        cc.get_resource_request_status(RequestToken="none")
    except Exception:
        pass
    times.append(time.perf_counter() - started)
print(f"{statistics.median(times[5:]):.4f}")
PY
)
echo "emulator round trip: $(python3 -c "print(f'{$rtt * 1000:.0f}')") ms (50 ms latency plus moto's processing); cdkd $profile build"

echo "== synthetic app (soak fixture: $(python3 -c "import json; print(len(json.load(open('tests/fixtures/cdk.out/soak/SoakStack.template.json'))['Resources']))") resources)"
cp -r tests/fixtures/cdk.out/soak "$work/soak"
# A first round warms the emulator (moto loads each service's backend on first use, which AWS
# does not make anyone wait for) and cdkd's remembered account and bucket region.
# A no-change deploy in that round fills the registry-schema cache (a day long) as well.
# The first command of a fresh cache loads every plugin once to cache its manifest.
"$cdkd" providers list >/dev/null
CDKD_LOG=cdkd=debug "$cdkd" --state-bucket bench-speed deploy -a "$work/soak" >/dev/null 2>"$work/warm.log"
"$cdkd" --state-bucket bench-speed deploy -a "$work/soak" >/dev/null
"$cdkd" --state-bucket bench-speed destroy -a "$work/soak" -f >/dev/null
reset_calls
read -r deploy deploy_rss <<<"$(timed_rss "$cdkd" --state-bucket bench-speed deploy -a "$work/soak")"
read -r all _ <<<"$(calls)"
echo "  deploy:    ${deploy} s, ${all} requests (target <= 1.0 s: $(verdict "$deploy" 1.0)); peak RSS ${deploy_rss} MB (target <= 60 MB: $(verdict "$deploy_rss" 60))"
reset_calls
read -r nochange nochange_rss <<<"$(timed_rss "$cdkd" --state-bucket bench-speed deploy -a "$work/soak")"
read -r all _ <<<"$(calls)"
echo "  no-change: ${nochange} s, ${all} requests (target <= 0.15 s: $(verdict "$nochange" 0.15)); peak RSS ${nochange_rss} MB"
# What a deploy loads once the manifests are cached: its types' plugins, each checked against
# its pin first (the warm-up round's first deploy, with debug logs).
echo "  plugins a deploy loaded: $(grep -c 'plugin library loaded' "$work/warm.log") of $(grep -c '^\[\[plugin\]\]' "target/$profile/plugins.toml") bundled"
# Lazy loading switched off: no manifest cache (an unwritable folder), so every run loads every
# bundled plugin to learn its types, as before issue 42.
read -r _ eager_nochange_rss <<<"$(CDKD_CACHE_DIR=/dev/null/cdkd timed_rss "$cdkd" --state-bucket bench-speed deploy -a "$work/soak")"
echo "  without the manifest cache (every plugin loaded): no-change peak RSS ${eager_nochange_rss} MB"
reset_calls
destroy=$(timed "$cdkd" --state-bucket bench-speed destroy -a "$work/soak" -f)
read -r all _ <<<"$(calls)"
echo "  destroy:   ${destroy} s, ${all} requests (target <= deploy ${deploy} s: $(verdict "$destroy" "$deploy"))"
read -r _ eager_deploy_rss <<<"$(CDKD_CACHE_DIR=/dev/null/cdkd timed_rss "$cdkd" --state-bucket bench-speed deploy -a "$work/soak")"
echo "  without the manifest cache (every plugin loaded): deploy peak RSS ${eager_deploy_rss} MB"
"$cdkd" --state-bucket bench-speed destroy -a "$work/soak" -f >/dev/null
# The plugins as a Linux archive installs them: gzip-compressed copies, inflated into memory
# when a run loads them (dist.sh). The bundled file points at them for these runs only.
if [ "$(uname -s)" = Linux ]; then
  "$cdkd" providers lock "$repo/plugins.toml" --output "target/$profile/plugins.toml" \
    --copy-into "$work/compressed" --compress >/dev/null
  echo "  compressed plugins: $(du -cm "$work"/compressed/* | tail -1 | cut -f1) MB on disk, uncompressed $(du -cm "target/$profile"/*.so | tail -1 | cut -f1) MB"
  "$cdkd" providers list >/dev/null
  read -r zdeploy zdeploy_rss <<<"$(timed_rss "$cdkd" --state-bucket bench-speed deploy -a "$work/soak")"
  read -r znochange znochange_rss <<<"$(timed_rss "$cdkd" --state-bucket bench-speed deploy -a "$work/soak")"
  echo "  compressed plugins: deploy ${zdeploy} s, peak RSS ${zdeploy_rss} MB; no-change ${znochange} s, ${znochange_rss} MB"
  "$cdkd" --state-bucket bench-speed destroy -a "$work/soak" -f >/dev/null
  pin_bundled "$profile"
fi

# The emulator is one Python process: its CPU time during a deploy is time requests spend
# queued behind each other, a floor no client goes below.
emulator_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$emulator/stat"; }
# One generated stack of 200 resources in chains of $2, deployed with the remaining arguments;
# prints "wall calls-on-a-resource's-path emulator-cpu-seconds".
generated() {
  local name=$1 chain=$2; shift 2
  GEN_RESOURCES=200 GEN_STACKS=1 GEN_CHAIN=$chain OUT="$work/$name" bash tests/fixtures/apps/regenerate.sh generator 2>/dev/null
  reset_calls
  local wall cc before after
  before=$(emulator_cpu)
  wall=$(timed "$cdkd" --state-bucket bench-speed deploy -a "$work/$name" "$@")
  after=$(emulator_cpu)
  # The calls on a resource's own path: its create and the status polls until it is done (the
  # observed-state read runs beside it).
  cc=$(curl -fsS "$endpoint/_emulator/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(v for k,v in s.items() if k in ("cloudcontrolapi:CreateResource", "cloudcontrolapi:GetResourceRequestStatus")) / 200)')
  "$cdkd" --state-bucket bench-speed destroy -a "$work/$name" -f >/dev/null
  echo "$wall $cc $(python3 -c "print(f'{$after - $before:.2f}')")"
}
# The generated topics are this bench's Cloud Control resources: the sns plugin is turned off
# for them (a plugins file layered over the bundled one).
printf '[[plugin]]\nname = "sns"\npath = "%s"\nenabled = false\n' "$repo/target/$profile/\${cdylib:cdkd_provider_sns}" >"$work/cc-plugins.toml"
export CDKD_PLUGINS="$work/cc-plugins.toml"
trust_file "$CDKD_PLUGINS"
# A deploy's own state round trips, on every path: lock, record read, the write-ahead intent,
# the final save, the release.
state_trips=5
echo "== wide stack: 200 independent Cloud Control resources"
read -r wall per busy <<<"$(generated wide 1)"
path=$(python3 -c "print(f'{($per + $state_trips) * $rtt:.2f}')")
bound=$(python3 -c "print(f'{max($per * 200 / 128 * $rtt + $state_trips * $rtt, $path, $busy):.2f}')")
echo "  deploy (adaptive):         ${wall} s; ${per} calls on a resource's path; bound ${bound} s = max(one resource's calls and the state trips ${path} s, 200/128 in flight, the emulator's CPU ${busy} s); $(python3 -c "print(f'{$wall / $bound:.2f}')")x the bound"
read -r fixed per10 _ <<<"$(generated wide10 1 --concurrency 10)"
echo "  deploy (--concurrency 10): ${fixed} s (bound 200/10 x ${per10} calls + state trips: $(python3 -c "print(f'{(20 * $per10 + $state_trips) * $rtt:.2f}')") s)"
# Cloud Control rate-limited: answers above 100 requests per second are throttled.
curl -fsS -X POST "$endpoint/_emulator/config" -d '{"rateLimits": {"cloudcontrolapi": {"perSecond": 100, "burst": 20}}}' >/dev/null
curl -fsS -X DELETE "$endpoint/_emulator/throttled" >/dev/null
read -r limited per _ <<<"$(generated limited 1)"
throttled=$(curl -fsS "$endpoint/_emulator/throttled" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("cloudcontrolapi", 0))')
curl -fsS -X POST "$endpoint/_emulator/config" -d '{"rateLimits": {}}' >/dev/null
echo "  deploy under a 100 requests/s Cloud Control limit: ${limited} s, ${throttled} throttled answers, all 200 created (bound: 200 x 3 calls (create, status, read) / 100 per s = 6.00 s)"

echo "== 200 resources in chains of 20"
read -r wall per busy <<<"$(generated chain20 20)"
# The longest chain of calls that depend on each other: the lock, the record read, the
# write-ahead intent, each link's create and status poll, the last link's observed-state read,
# the final save, the journal's listing and removal, the release.
around=8
path=$(python3 -c "print(f'{(20 * $per + $around) * $rtt:.2f}')")
ratio=$(python3 -c "print(f'{$wall / $path:.2f}')")
echo "  deploy: ${wall} s; critical path (20 links x ${per} calls + ${around} calls around them) x round trip = ${path} s; ratio ${ratio} (target <= 1.1: $(verdict "$ratio" 1.1)); the links alone $(python3 -c "print(f'{20 * $per * $rtt:.2f}')") s; emulator CPU ${busy} s"
