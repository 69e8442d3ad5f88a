# Sourced by the benchmark scripts: starts a private emulator on 127.0.0.1 answering every
# request after EMU_LATENCY_MS (default 50), points the AWS environment at it and stops it on
# exit. Sets $repo, $work (a temporary folder), $endpoint and $emulator (its pid).
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
work=$(mktemp -d)
trap 'kill $emulator 2>/dev/null || true; rm -rf "$work"' EXIT
EMU_LATENCY_MS=${EMU_LATENCY_MS:-50} .venv/bin/python tests/emulator/server.py --port 0 \
  --endpoint-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 1 300); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
endpoint=$(cat "$work/endpoint")
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true CDKD_S3_FORCE_PATH_STYLE=true \
  CDKD_CACHE_DIR="$work/cache" XDG_CONFIG_HOME="$work/config"
unset CDKD_PLUGINS

# Requests the emulator saw since the last `reset_calls`: "all outside-the-state-bucket".
calls() { curl -fsS "$endpoint/_emulator/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(s.values()), sum(v for k,v in s.items() if not k.startswith("s3:")))'; }
reset_calls() { curl -fsS -X DELETE "$endpoint/_emulator/stats" >/dev/null; }
# Runs a command, prints its wall time in seconds; shows its output and fails if it fails.
timed() { /usr/bin/time -f "%e" -o "$work/time" "$@" >"$work/out.log" 2>&1 || { cat "$work/out.log"; exit 1; }; cat "$work/time"; }
# The same, printing "wall-seconds peak-RSS-MB".
timed_rss() { /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out.log" 2>&1 || { cat "$work/out.log"; exit 1; }; awk '{printf "%s %.1f\n", $1, $2 / 1024}' "$work/time"; }
# The bundled plugins file of target/$1/ (release or debug), every library pinned by its hash,
# written from the workspace's plugins.toml (docs/providers.md#trust-and-install).
pin_bundled() { "$repo/target/$1/cdkd" providers lock "$repo/plugins.toml" --output "$repo/target/$1/plugins.toml" >/dev/null; }
# Trusts a plugins file a bench writes (a project's file, for this bench's own $XDG_CONFIG_HOME).
trust_file() { "$cdkd" providers trust "$1" >/dev/null; }
