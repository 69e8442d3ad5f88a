#!/usr/bin/env bash
# The demo (README): builds cdkd and its plugins, starts the local AWS emulator, bootstraps,
# deploys the example CDK app (tests/fixtures/cdk.out/demo: a queue, a topic, a log group and a
# table through their plugins, and an Acme::Echo::Thing through the example plugin, which a
# project's plugins file adds and the demo trusts first), shows the state record, changes
# nothing on a second deploy, and destroys it all.
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cargo build --workspace --quiet
# The development build's bundled plugins file, every library pinned by its hash.
./target/debug/cdkd providers lock plugins.toml --output target/debug/plugins.toml >/dev/null
endpoint=$(bash tests/emulator/start.sh)
trap 'bash tests/emulator/stop.sh' EXIT
store=$(mktemp -d)
export AWS_ENDPOINT_URL="$endpoint" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing \
  AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true CDKD_S3_FORCE_PATH_STYLE=true \
  CDKD_ECHO_DIR="$store"
# The demo's own configuration folder (its trust records), not yours; the example plugin comes
# from a project's plugins file, loaded once trusted.
export XDG_CONFIG_HOME="$store/config" CDKD_PLUGINS=tests/fixtures/echo-plugins.toml
cdkd=./target/debug/cdkd
app=tests/fixtures/cdk.out/demo
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "emulator: $endpoint"
step $cdkd providers trust tests/fixtures/echo-plugins.toml
step $cdkd providers list
step $cdkd bootstrap
step $cdkd diff -a $app
step $cdkd deploy -a $app
step $cdkd state show DemoStack
step $cdkd deploy -a $app
step $cdkd destroy -a $app --force
step $cdkd state list
rm -rf "$store"
