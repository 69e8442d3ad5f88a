#!/usr/bin/env bash
# Prints the plugin boundary's figures from a release build: load/init time, FFI round trip,
# .so sizes (debug and release), and cdkd's start-up time and peak memory.
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cargo build --release -p cdkd -p cdkd-provider-example-echo -p cdkd-test-faults -p cdkd-provider-s3 -p cdkd-provider-iam -p cdkd-provider-lambda
cargo build --release -p cdkd-tests --bin plugin-bench --bin analysis-bench --bin lock-bench
echo
./target/release/plugin-bench target/release/libcdkd_test_faults.so target/release/cdkd "${1:-20000}"
for profile in debug release; do
  for lib in target/$profile/libcdkd_provider_*.so; do
    [ -f "$lib" ] && printf '%-8s %-50s %6.1f MB\n' "$profile" "$(basename "$lib")" "$(echo "$(stat -c %s "$lib") / 1000000" | bc -l)"
  done
done
printf 'cdkd release binary: %.1f MB\n' "$(echo "$(stat -c %s target/release/cdkd) / 1000000" | bc -l)"
/usr/bin/time -f 'cdkd providers list: peak RSS %M KB, %e s wall' ./target/release/cdkd providers list >/dev/null

echo
# Analysis: generated apps of 1000 and 5000 resources (4 stacks, chains of 10 references).
work=$(mktemp -d)
for n in 1000 5000; do
  GEN_RESOURCES=$n GEN_STACKS=4 GEN_CHAIN=10 OUT="$work/gen$n" bash tests/fixtures/apps/regenerate.sh generator
done
./target/release/analysis-bench "$work/gen1000" "$work/gen5000"
rm -rf "$work"

echo
./target/release/lock-bench

echo
bash tests/bench/deploy_bench.sh

echo
bash tests/bench/provider_bench.sh release

echo
bash tests/bench/schema_bench.sh

echo
bash tests/bench/observe_bench.sh release

echo
bash tests/bench/speed_bench.sh release
bash tests/bench/export_bench.sh release
bash tests/bench/core_bench.sh release
