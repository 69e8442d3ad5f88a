#!/usr/bin/env bash
# Fault and crash soak: deploys the soak app (tests/fixtures/cdk.out/soak) under injected faults,
# SIGKILLs and double Ctrl-Cs, and the VPC app (tests/fixtures/cdk.out/vpcsoak) with SIGKILLs
# during deploys, destroys and rollbacks, and checks after every round that the emulator holds
# exactly the resources the state record names (no duplicate, no leak, nothing lost) and nothing
# after a destroy. See docs/testing.md ("Soak").
#   bash tests/soak/soak.sh [ROUNDS] [--app queues|vpc|all] [--vpc-rounds N] [driver options]
#     ROUNDS of each kind (default 3); --app all (the default) runs the queues soak with ROUNDS
#     and then the VPC soak with --vpc-rounds (default 1); --app vpc runs ROUNDS of each VPC kind.
# Needs the debug build (cargo build --workspace) and the emulator's venv (tests/emulator/setup.sh).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
rounds=3
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  rounds=$1
  shift
fi
which=all
vpc_rounds=
options=()
while [ $# -gt 0 ]; do
  case $1 in
    --app) which=$2; shift 2 ;;
    --vpc-rounds) vpc_rounds=$2; shift 2 ;;
    *) options+=("$1"); shift ;;
  esac
done
case $which in
  queues) vpc_rounds=0 ;;
  vpc) vpc_rounds=${vpc_rounds:-$rounds} ;;
  all) vpc_rounds=${vpc_rounds:-1} ;;
  *) echo "soak: --app is queues, vpc or all, not $which" >&2; exit 2 ;;
esac
cdkd="$repo/target/debug/cdkd"
app="$repo/tests/fixtures/cdk.out/soak"
vpc_app="$repo/tests/fixtures/cdk.out/vpcsoak"
[ -x "$cdkd" ] || { echo "soak: $cdkd is missing: run cargo build --workspace" >&2; exit 2; }
[ -x .venv/bin/python ] || { echo "soak: .venv is missing: run tests/emulator/setup.sh" >&2; exit 2; }
[ -f "$app/SoakStack.template.json" ] || { echo "soak: $app is missing: run tests/fixtures/apps/regenerate.sh" >&2; exit 2; }
[ -f "$vpc_app/VpcSoakStack.template.json" ] || { echo "soak: $vpc_app is missing: run tests/fixtures/apps/regenerate.sh" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/cdkd-soak.XXXXXX")
emulator=
cleanup() {
  status=$?
  if [ -n "$emulator" ]; then kill "$emulator" 2>/dev/null || true; wait "$emulator" 2>/dev/null || true; fi
  if [ "$status" -eq 0 ] && [ -z "${SOAK_KEEP:-}" ]; then rm -rf "$work"; else echo "soak: logs kept in $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
EMU_LATENCY_MS=50 .venv/bin/python tests/emulator/server.py --port 0 --endpoint-file "$work/endpoint" \
  --exit-with-parent >"$work/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 1 300); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
[ -s "$work/endpoint" ] || { echo "soak: the emulator did not start" >&2; cat "$work/emulator.log" >&2; exit 2; }
endpoint=$(cat "$work/endpoint")
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
  CDKD_S3_FORCE_PATH_STYLE=true CDKD_PLUGINS="$repo/plugins.toml"
bucket=soak-state
# The asset bucket too: the VPC app's default-SG custom resource has its handler as an asset.
timeout 120 "$cdkd" --state-bucket "$bucket" bootstrap >"$work/bootstrap.log" 2>&1 \
  || { echo "soak: bootstrap failed" >&2; cat "$work/bootstrap.log" >&2; exit 2; }
# A backstop over the drivers' own limits (each cdkd command is bounded by --step-timeout).
status=0
if [ "$which" != vpc ]; then
  mkdir -p "$work/queues"
  timeout 3600 .venv/bin/python tests/soak/soak.py --endpoint "$endpoint" --cdkd "$cdkd" --app "$app" \
    --bucket "$bucket" --work "$work/queues" --rounds "$rounds" "${options[@]}" || status=$?
fi
if [ "$vpc_rounds" -gt 0 ]; then
  mkdir -p "$work/vpc"
  timeout 7200 .venv/bin/python tests/soak/vpc.py --endpoint "$endpoint" --cdkd "$cdkd" --app "$vpc_app" \
    --bucket "$bucket" --work "$work/vpc" --rounds "$vpc_rounds" "${options[@]}" || status=$?
fi
exit "$status"
