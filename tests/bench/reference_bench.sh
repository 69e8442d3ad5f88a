#!/usr/bin/env bash
# The reference's benchmark stacks (issue 29) under the emulator's AWS timing profile
# (EMU_PROFILE=aws, tests/emulator/timing.py; each stack at its own time scale, below), each deployed
# into a freshly reset private emulator. Prints, per stack: the deploy's wall time, the stack's
# own time (its summary line; the wall time also loads the plugins, slow in a debug build), that
# time in AWS seconds (stack / scale), the critical path cdkd expects on AWS (`cdkd diff
# --critical-path --json`: the longest chain of dependent operations' expected times, each on
# its route), their ratio, and the requests by service (the emulator's /_emulator/stats).
# Each stack runs twice: "before" with ready work ordered by dependent counts alone
# (CDKD_DISPATCH_ORDER=dependents, as before issue 29) and "after" longest pole first.
# Usage: reference_bench.sh [debug|release] [LABEL...] (default debug, every stack; build cdkd
# and the plugins first). REFERENCE_BENCH_ORDERS="after" runs one ordering only;
# REFERENCE_BENCH_DEPLOY_ARGS="--concurrency 4" is passed to each deploy (ordering decides more
# when fewer resources run at once); REFERENCE_BENCH_SHOW=1 prints the deploys' logs.
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
export EMU_PROFILE=aws EMU_TIME_SCALE=${EMU_TIME_SCALE:-0.1} EMU_LATENCY_MS=0
source "$(dirname "$0")/emulator.sh"
profile=${1:-debug}
shift || true
cdkd="$repo/target/$profile/cdkd"
[ -x "$cdkd" ] || { echo "build it first: cargo build -p cdkd and the plugins ($profile)" >&2; exit 1; }
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
# label, fixture (tests/fixtures/cdk.out/<fixture>), stack, time scale. The stacks whose
# critical path is under 15 s run at scale 1: at 0.1 the emulator's own CPU time (moto answers
# some calls in 100-200 ms) and cdkd's would count ten times over against a path of a second.
# ec2 runs at 0.25: its path is a chain of creates whose retries pause a real 500 ms before
# asking again (an instance profile still propagating), which at 0.1 counts as 5 AWS s
# (measured: 1.18x at 0.1, 1.05x at 0.25, 1.03x at 1).
# REFERENCE_BENCH_SCALE=x runs every stack at x instead.
stacks=(
  "sdk reference RefSdkStack 1"
  "wide core CoreStack 1"
  "serverless reference RefServerlessStack 1"
  "ec2 reference RefEc2Stack 0.25"
  "webapp reference RefWebappStack 0.1"
  "ecs fargate FargateStack 0.1"
  "cloudfront website WebsiteStack 1"
  "vpc-lambda-cloudfront reference RefVpcLambdaCfStack 0.1"
)
wanted=("$@")
for fixture in reference core fargate website; do
  cp -r "tests/fixtures/cdk.out/$fixture" "$work/$fixture"
done
# The emulator's Cloud Control reports no DNSName for a load balancer, which two of the fargate
# app's outputs read (as in fargate_bench.sh): they are dropped.
python3 - "$work/fargate/FargateStack.template.json" <<'PY'
import json, sys
path = sys.argv[1]
template = json.load(open(path))
for name in [n for n, o in template["Outputs"].items() if "WebLB720665E7" in json.dumps(o)]:
    del template["Outputs"][name]
json.dump(template, open(path, "w"), indent=1)
PY
by_service() {
  curl -fsS "$endpoint/_emulator/stats" | python3 -c '
import json, sys
stats = json.load(sys.stdin)
by = {}
for key, count in stats.items():
    by[key.split(":")[0]] = by.get(key.split(":")[0], 0) + count
print("%d (%s)" % (sum(stats.values()), ", ".join("%s %d" % i for i in sorted(by.items()))))'
}
critical_ms() {
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print(next(s["criticalPath"]["totalMs"] for s in doc["stacks"] if s["stackName"] == sys.argv[2]))' "$1" "$2"
}
echo "profile aws, time scale per stack (column scale), $cdkd ${REFERENCE_BENCH_DEPLOY_ARGS:-}"
printf '| order | stack | resources | scale | wall s | stack s | AWS s (stack / scale) | critical path AWS s | ratio | requests by service |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for order in ${REFERENCE_BENCH_ORDERS:-before after}; do
  case $order in
    before) export CDKD_DISPATCH_ORDER=dependents ;;
    *) unset CDKD_DISPATCH_ORDER ;;
  esac
  for entry in "${stacks[@]}"; do
    read -r label fixture stack scale <<<"$entry"
    scale=${REFERENCE_BENCH_SCALE:-$scale}
    if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " =~ " $label " ]]; then continue; fi
    curl -fsS -X POST "$endpoint/moto-api/reset" >/dev/null
    curl -fsS -X POST "$endpoint/_emulator/config" -H 'content-type: application/json' \
      -d "{\"profile\": \"aws\", \"timeScale\": $scale}" >/dev/null
    "$cdkd" --state-bucket bench-ref bootstrap --no-assets >"$work/bootstrap.log" 2>&1 || { cat "$work/bootstrap.log"; exit 1; }
    # A cdkd from before issue 29 has no --critical-path: its rows show none.
    critical=0
    if "$cdkd" --state-bucket bench-ref diff -a "$work/$fixture" "$stack" --critical-path --json >"$work/diff.json" 2>"$work/diff.log"; then
      critical=$(critical_ms "$work/diff.json" "$stack")
    fi
    resources=$(python3 -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1]))["Resources"].values() if r["Type"] != "AWS::CDK::Metadata"))' "$work/$fixture/$stack.template.json")
    reset_calls
    # shellcheck disable=SC2086 # the extra arguments are words
    wall=$(timed "$cdkd" --state-bucket bench-ref deploy -a "$work/$fixture" "$stack" ${REFERENCE_BENCH_DEPLOY_ARGS:-})
    cp "$work/out.log" "$work/$order-$label.log"
    own=$(sed -n "s/^$stack: .* in \([0-9.]*\)s\$/\1/p" "$work/out.log" | tail -1)
    own=${own:-$wall}
    python3 - "$order" "$label" "$resources" "$wall" "$own" "$scale" "$critical" "$(by_service)" <<'PY'
import sys
order, label, resources, wall, own, scale, critical, calls = sys.argv[1:]
aws = float(own) / float(scale)
path = int(critical) / 1000
shown, ratio = (f"{path:.1f}", f"{aws / path:.2f}") if path else ("-", "-")
print(f"| {order} | {label} | {resources} | {scale} | {float(wall):.1f} | {float(own):.1f} | {aws:.1f} | {shown} | {ratio} | {calls} |")
PY
  done
done
[ -z "${REFERENCE_BENCH_SHOW:-}" ] || cat "$work"/*.log
