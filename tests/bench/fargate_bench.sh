#!/usr/bin/env bash
# The Fargate-service app (tests/fixtures/cdk.out/fargate: CDK's
# ApplicationLoadBalancedFargateService with its image from an ECR repository in the stack, a VPC
# with a NAT gateway, 37 resources) against a private emulator answering every request after
# 50 ms, deployed and destroyed twice: with every bundled plugin, and with the plugins of issue 28
# (ecs, ecr, elbv2) and the service plugins a Cloud Control test turns off (SERVICE_PLUGINS of
# tests/src/lib.rs: here the app's log group) disabled, so those types go through Cloud Control
# as they did before. Prints each deploy's wall time and requests (all, outside the state bucket,
# Cloud Control). Without the AWS timing profile the emulator's Cloud Control answers at once:
# the figures count round trips, not Cloud Control's own 15-25 s per resource on AWS; with
# `EMU_PROFILE=aws EMU_TIME_SCALE=0.1` (AWS's timing in a tenth of the time) they include it,
# and the plugins' destroy includes the service's drain behind the load balancer (300 s on AWS).
# The emulator's Cloud Control cannot delete an ECS service: only the plugins' destroy is timed.
# Usage: fargate_bench.sh [release|debug] (default release; build cdkd and the plugins first).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
source "$(dirname "$0")/emulator.sh"
profile=${1:-release}
cdkd="$repo/target/$profile/cdkd"
[ -x "$cdkd" ] || { echo "build it first: cargo build --$profile -p cdkd and the plugins" >&2; exit 1; }
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
cp -r tests/fixtures/cdk.out/fargate "$work/fargate"
# The emulator's Cloud Control reports no DNSName for a load balancer, which two of the app's
# outputs read: both runs drop those outputs (the resources are the same).
python3 - "$work/fargate/FargateStack.template.json" <<'PY'
import json, sys
path = sys.argv[1]
template = json.load(open(path))
for name in [n for n, o in template["Outputs"].items() if "WebLB720665E7" in json.dumps(o)]:
    del template["Outputs"][name]
json.dump(template, open(path, "w"), indent=1)
PY
# The Cloud Control path: a plugins file layered over the bundled one, as tests/src/lib.rs's
# cloud_control_plugins_file writes it, with this issue's plugins off too.
: >"$work/cc-plugins.toml"
for name in ecs ecr elbv2 sqs sns ssm logs dynamodb events kms secretsmanager stepfunctions kinesis cloudwatch scheduler route53 acm; do
  grep -q "name = \"$name\"" plugins.toml || continue
  printf '[[plugin]]\nname = "%s"\npath = "%s"\nenabled = false\n\n' "$name" \
    "$repo/target/$profile/\${cdylib:cdkd_provider_$name}" >>"$work/cc-plugins.toml"
done
trust_file "$work/cc-plugins.toml"
stats() {
  curl -fsS "$endpoint/_emulator/stats" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(sum(s.values()), sum(v for k, v in s.items() if not k.startswith("s3:")),
      sum(v for k, v in s.items() if k.startswith("cloudcontrol")))'
}
run() {
  local label=$1 bucket=$2
  "$cdkd" --state-bucket "$bucket" bootstrap --no-assets >"$work/bootstrap.log" 2>&1 || { cat "$work/bootstrap.log"; exit 1; }
  reset_calls
  local wall
  wall=$(timed "$cdkd" --state-bucket "$bucket" deploy -a "$work/fargate") || { cat "$work/out.log"; exit 1; }
  cp "$work/out.log" "$work/$bucket-deploy.log"
  read -r all outside cc <<<"$(stats)"
  # The stack's own time (its summary line), beside the process's wall time, which includes
  # loading the plugins (large in a debug build).
  stack=$(sed -n 's/^FargateStack: .* in \([0-9.]*\)s$/\1/p' "$work/out.log")
  echo "$label: deploy ${wall} s wall (stack ${stack} s), ${all} requests (${outside} outside the state bucket, ${cc} Cloud Control)"
  [ "$3" = destroy ] || return 0
  reset_calls
  wall=$(timed "$cdkd" --state-bucket "$bucket" destroy -a "$work/fargate" -f) || { cat "$work/out.log"; exit 1; }
  read -r all outside cc <<<"$(stats)"
  echo "$label: destroy ${wall} s, ${all} requests (${outside} outside the state bucket, ${cc} Cloud Control)"
}
echo "== fargate app at ${EMU_LATENCY_MS:-50} ms per request"
run "all plugins          " bench-fargate-sdk destroy
CDKD_PLUGINS="$work/cc-plugins.toml" run "Cloud Control (before)" bench-fargate-cc keep
[ -z "${FARGATE_BENCH_SHOW:-}" ] || cat "$work/bench-fargate-sdk-deploy.log" "$work/bench-fargate-cc-deploy.log"
