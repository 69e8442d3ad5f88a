#!/usr/bin/env bash
# Deploy benchmark (issue 5): a generated stack of 200 Cloud Control resources in chains of
# dependent resources, against a private emulator answering every request after 50 ms.
# Prints wall time, the critical-path lower bound, their ratio, API calls per resource and
# peak RSS; then the host CPU time of a no-change deploy of 1000 resources.
# Needs the release build (tests/bench.sh builds it) and aws-cdk-lib (tests/fixtures/apps).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
cdkd="$repo/target/release/cdkd"
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
work=$(mktemp -d)
trap 'kill $emulator 2>/dev/null || true; rm -rf "$work"' EXIT
EMU_LATENCY_MS=50 .venv/bin/python tests/emulator/server.py --port 0 --endpoint-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 1 300); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
endpoint=$(cat "$work/endpoint")
# No plugins at all: a plugins file that does not inherit the bundled one.
echo 'inherit = false' >"$work/no-plugins.toml"
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true CDKD_S3_FORCE_PATH_STYLE=true CDKD_PLUGINS="$work/no-plugins.toml" \
  XDG_CONFIG_HOME="$work/config" CDKD_CACHE_DIR="$work/cache"
"$cdkd" providers trust "$work/no-plugins.toml" >/dev/null
"$cdkd" --state-bucket bench-state bootstrap --no-assets >/dev/null
latency=0.05
concurrency=10
# The emulator's real round trip: the configured latency plus moto's own processing.
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
# The emulator is one Python process: its CPU time during a deploy is time every request
# spends queued behind the others, a floor no client can go below.
emulator_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$emulator/stat"; }
for chain in 20 10; do
  out="$work/chain$chain"
  GEN_RESOURCES=200 GEN_STACKS=1 GEN_CHAIN=$chain OUT="$out" bash tests/fixtures/apps/regenerate.sh generator 2>/dev/null
  curl -fsS -X DELETE "$endpoint/_emulator/stats" >/dev/null
  cpu_before=$(emulator_cpu)
  /usr/bin/time -f "%e %M" -o "$work/time" "$cdkd" --state-bucket bench-state deploy -a "$out" --concurrency $concurrency >"$work/deploy.log"
  cpu_after=$(emulator_cpu)
  read -r wall rss <"$work/time"
  curl -fsS "$endpoint/_emulator/stats" >"$work/stats.json"
  python3 - "$wall" "$rss" "$chain" "$work/stats.json" "$rtt" "$cpu_before" "$cpu_after" <<PY
import json, sys
wall, rss, chain, rtt = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[5])
emulator_busy = float(sys.argv[7]) - float(sys.argv[6])
stats = json.load(open(sys.argv[4]))
n, latency, concurrency = 200, $latency, $concurrency
cc = sum(v for k, v in stats.items() if k.startswith("cloudcontrolapi"))
total = sum(stats.values())
round_trips = cc / n  # per resource: CreateResource + status polls
chain_bound = chain * round_trips * latency
work_bound = n / concurrency * round_trips * latency
bound = max(chain_bound, work_bound)
print(f"deploy {n} resources, chains of {chain} ({n // chain} chains), concurrency {concurrency}, {latency*1000:.0f} ms per request:")
print(f"  wall {wall:.2f} s; lower bound {bound:.2f} s (longest chain {chain_bound:.2f} s, work/concurrency {work_bound:.2f} s); ratio {wall / bound:.2f}")
measured = bound * rtt / latency
print(f"  with the emulator's measured round trip ({rtt * 1000:.0f} ms, latency plus moto's processing): lower bound {measured:.2f} s, ratio {wall / measured:.2f}")
print(f"  the emulator's own CPU time during the deploy: {emulator_busy:.2f} s (one process: requests queue behind each other); lower bound max(chain, emulator) {max(measured, emulator_busy):.2f} s, ratio {wall / max(measured, emulator_busy):.2f}")
print(f"  API calls per resource: {round_trips:.2f} Cloud Control, {total / n:.2f} in all (state saves and locks included); peak RSS {rss / 1024:.1f} MB")
PY
  "$cdkd" --state-bucket bench-state destroy -a "$out" -f >/dev/null
done
# No-change deploy of 1000 resources: host CPU time, no latency.
curl -fsS -X POST "$endpoint/_emulator/config" -d '{"latencyMs": 0}' >/dev/null
out="$work/big"
GEN_RESOURCES=1000 GEN_STACKS=1 GEN_CHAIN=10 OUT="$out" bash tests/fixtures/apps/regenerate.sh generator 2>/dev/null
"$cdkd" --state-bucket bench-state deploy -a "$out" --concurrency 20 >/dev/null
/usr/bin/time -f "%e %U %S %M" -o "$work/time" "$cdkd" --state-bucket bench-state deploy -a "$out" >"$work/nochange.log"
read -r wall user sys rss <"$work/time"
echo "no-change deploy of 1000 resources: host CPU $(python3 -c "print(f'{$user + $sys:.2f}')") s (user $user, sys $sys), wall $wall s, peak RSS $(python3 -c "print(f'{$rss / 1024:.1f}')") MB"
grep -c unchanged "$work/nochange.log" >/dev/null || true
