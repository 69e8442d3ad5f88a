#!/usr/bin/env bash
# Builds the release archive cdkd-<version>-<target>.tar.gz: everything an install needs, so
# installing it compiles nothing (`bash install.sh cdkd-<version>-<target>.tar.gz [PREFIX]`):
#   bin/cdkd
#   lib/cdkd/plugins.toml            the bundled plugins file, every library pinned by its SHA-256
#   lib/cdkd/plugins/<library>       the bundled plugins (file names as this platform has them;
#                                    gzip-compressed on Linux: <library>.gz)
#   share/bash-completion/completions/cdkd, share/zsh/site-functions/_cdkd,
#   share/fish/vendor_completions.d/cdkd.fish
#   share/man/man1/cdkd*.1
#   install.sh                       installs this folder (the same script as the repository's)
#   SHA256SUMS                       every file above
# Usage: bash dist.sh [--profile release|debug] [--out DIR] [--plugins NAME,NAME] [--no-archive]
#   --plugins packages only those bundled plugins (the tests package a few debug ones);
#   --no-archive stops at the folder DIR/cdkd-<version>-<target>/ (install.sh from source).
# Prints the archive's (or the folder's) path as its last line.
set -euo pipefail
repo=$(cd "$(dirname "$0")" && pwd)
profile=release out="$repo/target/dist" only="" archive=1
while [ $# -gt 0 ]; do
  case $1 in
    --profile) profile=$2; shift 2 ;;
    --out) mkdir -p "$2"; out=$(cd "$2" && pwd); shift 2 ;;
    --plugins) only=$2; shift 2 ;;
    --no-archive) archive=0; shift ;;
    *) echo "dist.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
cd "$repo"
flags=()
[ "$profile" = release ] && flags=(--release)
# The whole workspace, not `-p` per plugin: a narrower package set resolves other features for
# the shared AWS SDK crates and would compile them all a second time beside the workspace build.
cargo build ${flags[@]+"${flags[@]}"} --workspace >&2
cdkd="target/$profile/cdkd"
version=$("$cdkd" --version | awk '{print $2}')
target=$(rustc -vV | sed -n 's/^host: //p')
name="cdkd-$version-$target"
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage="$out/$name"
rm -rf "$stage" "$stage.tar.gz"
mkdir -p "$stage/bin" "$stage/lib/cdkd/plugins" "$stage/share/man/man1" \
  "$stage/share/bash-completion/completions" "$stage/share/zsh/site-functions" \
  "$stage/share/fish/vendor_completions.d"
install -m 755 "$cdkd" "$stage/bin/cdkd"
install -m 755 install.sh "$stage/install.sh"

# The bundled plugins file: the workspace's, or only the named entries of it. cdkd itself
# copies each library (it alone knows this platform's file names) and pins the copies.
source_file=plugins.toml
if [ -n "$only" ]; then
  source_file="$out/.plugins-$name.toml"
  # The named [[plugin]] blocks only (a block ends at the next table); relative library paths
  # made absolute, since they resolve against the file's folder.
  REPO="$repo" ONLY="$only" awk '
    BEGIN { n = split(ENVIRON["ONLY"], names, ","); for (i = 1; i <= n; i++) { gsub(/ /, "", names[i]); wanted[names[i]] = 1 } }
    /^\[/ { flush(); inplugin = ($0 ~ /^\[\[plugin\]\]/); block = ""; keep = 0 }
    inplugin && /^name *= */ { v = $0; sub(/^name *= *"/, "", v); sub(/".*/, "", v); keep = (v in wanted); if (keep) found[v] = 1 }
    inplugin && /^path *= *"target\// { sub(/"target\//, "\"" ENVIRON["REPO"] "/target/") }
    inplugin { block = block $0 "\n"; next }
    { print }
    function flush() { if (inplugin && keep) printf "%s", block; inplugin = 0 }
    END { flush(); for (w in wanted) if (!(w in found)) { print "dist.sh: --plugins names " w ", which plugins.toml does not list" > "/dev/stderr"; exit 2 } }' plugins.toml >"$source_file"
fi
# On Linux the plugins are stored gzip-compressed (a third of the size on disk); cdkd checks
# each against its pin as stored and inflates it into memory when a run loads it.
compress=()
[ "$(uname -s)" = Linux ] && compress=(--compress)
"$cdkd" providers lock "$source_file" --output "$stage/lib/cdkd/plugins.toml" \
  --copy-into "$stage/lib/cdkd/plugins" ${compress[@]+"${compress[@]}"} >&2
[ "$source_file" = plugins.toml ] || rm -f "$source_file"

for shell in bash zsh fish; do
  case $shell in
    bash) file="$stage/share/bash-completion/completions/cdkd" ;;
    zsh) file="$stage/share/zsh/site-functions/_cdkd" ;;
    fish) file="$stage/share/fish/vendor_completions.d/cdkd.fish" ;;
  esac
  "$cdkd" completions "$shell" >"$file"
done
"$cdkd" man-pages "$stage/share/man/man1" >&2

sum() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }
(cd "$stage" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | while read -r f; do sum "$f"; done >SHA256SUMS)

if [ "$archive" = 1 ]; then
  # gzip -6, the default: the release plugins compress to about a third.
  tar -C "$out" -czf "$stage.tar.gz" "$name"
  rm -rf "$stage"
  echo "$stage.tar.gz"
else
  echo "$stage"
fi
