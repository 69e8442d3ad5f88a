#!/usr/bin/env bash
# The test command (README): installs the emulator if needed, builds the workspace (host and
# every bundled plugin), then runs the Rust unit and end-to-end tests, the emulator's tests and a
# short soak (`bash tests/parallel.sh NAME...` runs some of them again).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
bash tests/emulator/setup.sh
# tmux for the live-progress test (a real terminal), from Debian's packages.
if ! command -v tmux >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq tmux >/dev/null
fi
# aws-cdk-lib for the tests that run a real CDK app (pinned by package-lock.json).
[ -d tests/fixtures/apps/node_modules/aws-cdk-lib ] || (cd tests/fixtures/apps && npm ci --no-audit --no-fund --silent)
cargo build --workspace
# The development build's bundled plugins file, every library pinned by its SHA-256.
./target/debug/cdkd providers lock plugins.toml --output target/debug/plugins.toml
# Unit tests of the host and every plugin, then the end-to-end binaries, the emulator's tests and
# a short soak three at a time (tests/parallel.sh: each with its own emulator). Every cargo call
# selects the whole workspace: a narrower selection (`-p cdkd-tests`) resolves other features
# for the AWS SDK crates and compiles them, and the host, a second time.
cargo test --workspace --lib --bins
cargo test --workspace --doc
# Fuzzing (host/src/fuzz.rs): five parsers, 12 s each, on inputs mutated from the fixtures.
CDKD_FUZZ_SECONDS=${CDKD_FUZZ_SECONDS:-12} cargo test --workspace --lib -- --ignored fuzz:: --test-threads=1 --nocapture
bash tests/parallel.sh
