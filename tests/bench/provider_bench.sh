#!/usr/bin/env bash
# Provider benchmark (issue 6): per resource type, the API calls of one create and one delete,
# and the create latency, through its SDK plugin and through Cloud Control, against a private
# emulator answering every request after 50 ms. Cloud Control operations finish at once in the
# emulator (real ones take seconds), so its figures are a best case for Cloud Control.
# Usage: provider_bench.sh [debug|release] (the cdkd and plugin builds to use; default release).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
profile=${1:-release}
cdkd="$repo/target/$profile/cdkd"
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
work=$(mktemp -d)
trap 'kill $emulator 2>/dev/null || true; rm -rf "$work"' EXIT
EMU_LATENCY_MS=50 .venv/bin/python tests/emulator/server.py --port 0 --endpoint-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 1 300); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
endpoint=$(cat "$work/endpoint")
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true CDKD_S3_FORCE_PATH_STYLE=true \
  XDG_CONFIG_HOME="$work/config" CDKD_CACHE_DIR="$work/cache"
# Two plugin sets with the same baseline: the SDK plugins, or only the echo plugin (so AWS types
# go to Cloud Control).
for set in sdk cc; do
  {
    echo "inherit = false"
    echo "[[plugin]]"; echo "name = \"example-echo\""; echo "path = \"$repo/target/$profile/\${cdylib:cdkd_provider_example_echo}\""
    if [ $set = sdk ]; then
      for p in s3 iam lambda ec2; do
        echo "[[plugin]]"; echo "name = \"$p\""; echo "path = \"$repo/target/$profile/\${cdylib:cdkd_provider_$p}\""
      done
    fi
  } >"$work/plugins-$set.toml"
  # Project files: trusted for this bench's own configuration folder.
  "$cdkd" providers trust "$work/plugins-$set.toml" >/dev/null
done
export CDKD_ECHO_DIR="$work/echo"
CDKD_PLUGINS="$work/plugins-cc.toml" "$cdkd" --state-bucket bench-state bootstrap --no-assets >/dev/null
# A role for the functions, made outside cdkd.
role=$(.venv/bin/python - "$endpoint" <<'PY'
import json, sys, boto3
iam = boto3.client("iam", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
print(iam.create_role(RoleName="bench-fn-role", AssumeRolePolicyDocument=json.dumps(doc))["Role"]["Arn"])
PY
)
python3 - "$repo/tests/fixtures/cdk.out/storage" "$work" "$role" <<'PY'
import json, os, shutil, sys
fixture, work, role = sys.argv[1:]
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}
trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
cases = {
    "baseline": ("Acme::Echo::Thing", {"Message": "baseline"}),
    "AWS::S3::Bucket": ("AWS::S3::Bucket", {"VersioningConfiguration": {"Status": "Enabled"}}),
    "AWS::IAM::Role": ("AWS::IAM::Role", {"AssumeRolePolicyDocument": trust}),
    "AWS::IAM::Group": ("AWS::IAM::Group", {"Policies": [{"PolicyName": "read", "PolicyDocument": policy}]}),
    "AWS::IAM::User": ("AWS::IAM::User", {}),
    "AWS::Lambda::Function": ("AWS::Lambda::Function", {"Runtime": "nodejs20.x", "Handler": "index.handler", "Role": role, "Code": {"ZipFile": "exports.handler = async () => 1;"}}),
    "AWS::EC2::VPC": ("AWS::EC2::VPC", {"CidrBlock": "10.1.0.0/16", "EnableDnsHostnames": True}),
    "AWS::EC2::SecurityGroup": ("AWS::EC2::SecurityGroup", {"GroupDescription": "bench", "SecurityGroupIngress": [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}]}),
    "AWS::EC2::EIP": ("AWS::EC2::EIP", {"Domain": "vpc"}),
    "AWS::EC2::InternetGateway": ("AWS::EC2::InternetGateway", {}),
}
for name, (kind, props) in cases.items():
    out = os.path.join(work, name.replace(":", "_"))
    shutil.copytree(fixture, out)
    # The echo baseline rides along in every case, so the difference is the type's own calls.
    resources = {"Baseline": {"Type": "Acme::Echo::Thing", "Properties": {"Message": "baseline"}}}
    if name != "baseline":
        resources["Subject"] = {"Type": kind, "Properties": props}
    with open(os.path.join(out, "StorageStack.template.json"), "w") as f:
        json.dump({"Resources": resources}, f)
PY
stats() { curl -fsS "$endpoint/_emulator/stats"; }
reset() { curl -fsS -X DELETE "$endpoint/_emulator/stats" >/dev/null; }
once() { # set, case dir, service -> that service's "create_calls delete_calls" and the
  # create's "ms", or "fail" when the deploy failed
  local set=$1 dir=$2 service=$3 status=0
  reset
  CDKD_PLUGINS="$work/plugins-$set.toml" "$cdkd" --state-bucket bench-state deploy -a "$dir" --json >"$work/deploy.json" 2>"$work/deploy.err" || status=$?
  stats >"$work/create.json"; reset
  local destroyed=0
  CDKD_PLUGINS="$work/plugins-$set.toml" "$cdkd" --state-bucket bench-state destroy -a "$dir" -f >/dev/null 2>&1 || destroyed=$?
  stats >"$work/delete.json"
  if [ $destroyed -ne 0 ]; then
    # (the emulator's Cloud Control cannot delete some types): forget the record so the next
    # case starts clean, and report the type as not measurable.
    CDKD_PLUGINS="$work/plugins-$set.toml" "$cdkd" --state-bucket bench-state orphan -a "$dir" -f >/dev/null 2>&1 || true
  fi
  if [ $status -ne 0 ] || [ $destroyed -ne 0 ]; then echo fail; return; fi
  python3 - "$work" "$service" <<'PY'
import json, sys
work, service = sys.argv[1:]
ms = [e["elapsedMs"] for e in map(json.loads, open(f"{work}/deploy.json")) if e.get("logicalId") == "Subject" and e.get("elapsedMs") is not None]
count = lambda f: sum(v for k, v in json.load(open(f"{work}/{f}.json")).items() if k.startswith(service + ":"))
print(count("create"), count("delete"), ms[0] if ms else 0)
PY
}
measure() { # set, case dir, service -> medians of five runs, or "fail"
  local runs=()
  for _ in 1 2 3 4 5; do runs+=("$(once "$1" "$2" "$3")"); done
  printf '%s\n' "${runs[@]}" | python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin if line.strip()]
if any(r == ["fail"] for r in rows):
    print("fail")
else:
    print(*(int(statistics.median(int(r[i]) for r in rows)) for i in range(3)))
'
}
figures() { # measured line, baseline create and delete calls -> "create/delete calls" and latency
  if [ "$1" = fail ]; then echo "n/a n/a"; return; fi
  read -r c d ms <<<"$1"
  echo "$((c - $2))/$((d - $3)) ${ms}ms"
}
# Calls are counted in the type's own service; S3's count also holds cdkd's state reads and
# writes, so the baseline stack's S3 calls are subtracted (S3 figures can be off by one when
# background saves coalesce differently).
read -r s3_create s3_delete _ <<<"$(measure cc "$work/baseline" s3)"
echo "Per type, medians of 5 runs at 50 ms per request; calls = one create / one delete in the type's service, Cloud Control calls for CC (n/a: the emulator's Cloud Control cannot create or delete the type)"
printf '%-24s %-14s %-12s %-14s %s\n' "type" "SDK calls" "SDK create" "CC calls" "CC create"
# (ManagedPolicy is left out: the emulator's Cloud Control cannot delete it.)
for kind in AWS::S3::Bucket AWS::IAM::Role AWS::IAM::Group AWS::IAM::User AWS::Lambda::Function \
    AWS::EC2::VPC AWS::EC2::SecurityGroup AWS::EC2::EIP AWS::EC2::InternetGateway; do
  dir="$work/${kind//:/_}"
  service=$(echo "$kind" | cut -d: -f3 | tr '[:upper:]' '[:lower:]')
  if [ "$service" = s3 ]; then base="$s3_create $s3_delete"; else base="0 0"; fi
  read -r sdk_calls sdk_ms <<<"$(figures "$(measure sdk "$dir" "$service")" $base)"
  read -r cc_calls cc_ms <<<"$(figures "$(measure cc "$dir" cloudcontrolapi)" 0 0)"
  printf '%-24s %-14s %-12s %-14s %s\n' "$kind" "$sdk_calls" "$sdk_ms" "$cc_calls" "$cc_ms"
done
for p in s3 iam lambda ec2; do
  printf 'libcdkd_provider_%s.so (%s): %.1f MB\n' "$p" "$profile" "$(echo "$(stat -c %s "target/$profile/libcdkd_provider_$p.so") / 1000000" | bc -l)"
done
