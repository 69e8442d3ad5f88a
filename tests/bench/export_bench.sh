#!/usr/bin/env bash
# `cdkd export` of the synthetic app (tests/fixtures/cdk.out/soak: 50 resources: SQS, SNS, SSM
# through Cloud Control and IAM roles through the plugin) against a private emulator answering
# every request after 50 ms: wall time and the requests it made, by service, and the phases'
# share. Usage: export_bench.sh [release|debug] (default release; build the workspace first).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
source "$(dirname "$0")/emulator.sh"
profile=${1:-release}
cdkd="$repo/target/$profile/cdkd"
[ -x "$cdkd" ] || { echo "build it first: cargo build --$profile --workspace" >&2; exit 1; }
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
"$cdkd" --state-bucket bench-export bootstrap --no-assets >/dev/null
# A CDK-bootstrapped account holds the parameter the template's BootstrapVersion reads.
.venv/bin/python -c "import boto3,sys; boto3.client('ssm', endpoint_url=sys.argv[1], region_name='us-east-1').put_parameter(Name='/cdk-bootstrap/hnb659fds/version', Value='30', Type='String')" "$endpoint"
cp -r tests/fixtures/cdk.out/soak "$work/soak"
"$cdkd" --state-bucket bench-export deploy -a "$work/soak" >/dev/null
reset_calls
wall=$(timed "$cdkd" --state-bucket bench-export export -a "$work/soak" --yes)
curl -fsS "$endpoint/_emulator/stats" | python3 -c '
import json, sys
stats = json.load(sys.stdin)
by_service = {}
for key, count in stats.items():
    service = key.split(":")[0]
    by_service[service] = by_service.get(service, 0) + count
services = ", ".join("%s %d" % item for item in sorted(by_service.items()))
print("  requests: %d (%s)" % (sum(stats.values()), services))
actions = ", ".join("%s %d" % (k.split(":", 1)[1], n) for k, n in sorted(stats.items()) if k.startswith("cloudformation"))
print("  CloudFormation: " + actions)
print("  S3: " + ", ".join("%s %d" % (k.split(":", 1)[1], n) for k, n in sorted(stats.items()) if k.startswith("s3")))
'
echo "  wall: ${wall} s (cdkd $profile, 50 ms per request)"
grep -E "^Phase|import " "$work/out.log" | head -3
echo "  resources imported: $(grep -c '^  import ' "$work/out.log")"
