#!/usr/bin/env bash
# The demo (README): builds cdkd and its plugins, starts the local AWS emulator, then shows
# the plugin host at work against it: which providers are loaded, who handles which type,
# and an Acme::Echo::Thing created, read and deleted through the example plugin.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cargo build --workspace --quiet
endpoint=$(bash tests/emulator/start.sh)
trap 'bash tests/emulator/stop.sh' EXIT
export AWS_ENDPOINT_URL="$endpoint" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing \
  AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true
store=$(mktemp -d)
cdkd=./target/debug/cdkd
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "emulator: $endpoint"
step $cdkd providers list
step $cdkd providers show AWS::SQS::Queue
step $cdkd providers show Acme::Echo::Thing
echo "(the plugin receives the region, endpoint and credentials the host resolved:)"
step $cdkd providers call Acme::Echo::Thing host_context
props="{\"Directory\":\"$store\",\"Message\":\"hello from the demo\"}"
step $cdkd providers call Acme::Echo::Thing create --stack-name Demo --logical-id Greeter --properties "$props" | tee "$store/created.json"
id=$(sed -n 's/.*"physicalId": "\(.*\)".*/\1/p' "$store/created.json")
step ls "$store"
step $cdkd providers call Acme::Echo::Thing read_current_state --physical-id "$id" --properties "$props"
step $cdkd providers call Acme::Echo::Thing delete --physical-id "$id" --properties "$props"
step ls "$store"
echo
echo "A plugin panic is an error, not a crash:"
step $cdkd providers call Acme::Echo::Fault create --properties '{"Panic":"demo"}' || echo "(exit code $?)"
rm -rf "$store"
