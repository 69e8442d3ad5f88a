#!/usr/bin/env bash
# Installs cdkd with its bundled provider plugins where the installed binary finds them itself:
#   PREFIX/bin/cdkd
#   PREFIX/lib/cdkd/plugins.toml     the bundled plugins file, every library pinned by its SHA-256
#   PREFIX/lib/cdkd/plugins/<library>
#   PREFIX/share/{man,bash-completion,zsh,fish}/...
# Usage:
#   bash install.sh cdkd-<version>-<target>.tar.gz [PREFIX]   an archive (dist.sh): no compiling
#   bash install.sh DIR [PREFIX]                            an unpacked archive (its own install.sh)
#   bash install.sh [PREFIX]                                from this checkout: builds first
# PREFIX defaults to ~/.local. From source, CDKD_INSTALL_PROFILE=debug installs the debug build.
# Your own plugins go in $XDG_CONFIG_HOME/cdkd/plugins.toml (`cdkd providers install`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
from=""
if [ $# -gt 0 ] && { [[ $1 == *.tar.gz ]] || [ -f "$1/SHA256SUMS" ]; }; then
  from=$1
  shift
elif [ -f "$here/SHA256SUMS" ] && [ -x "$here/bin/cdkd" ]; then
  # The install.sh inside an unpacked archive, given a PREFIX or nothing.
  from=$here
fi
prefix=${1:-$HOME/.local}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "$from" ]; then
  [ -f "$here/Cargo.toml" ] || { echo "install.sh: give an archive (cdkd-<version>-<target>.tar.gz) to install" >&2; exit 2; }
  from=$(bash "$here/dist.sh" --profile "${CDKD_INSTALL_PROFILE:-release}" --no-archive --out "$work" | tail -1)
elif [[ $from == *.tar.gz ]]; then
  [ -f "$from" ] || { echo "install.sh: no archive at $from" >&2; exit 2; }
  tar -C "$work" -xzf "$from"
  folders=("$work"/cdkd-*/)
  [ ${#folders[@]} = 1 ] && [ -d "${folders[0]}" ] || { echo "install.sh: $from does not hold one cdkd-<version>-<target>/ folder" >&2; exit 2; }
  from=${folders[0]%/}
fi

# Every file as dist.sh listed it, before anything is copied.
sum_check() { if command -v sha256sum >/dev/null; then sha256sum --quiet -c SHA256SUMS; else shasum -a 256 -q -c SHA256SUMS; fi; }
(cd "$from" && sum_check) || { echo "install.sh: $from does not match its SHA256SUMS; download it again" >&2; exit 1; }

mkdir -p "$prefix/bin" "$prefix/lib"
# The plugins and their pinned file are copied beside the previous install's and renamed over
# it, so a cdkd running meanwhile finds one whole set or the other (its libraries stay open).
rm -rf "$prefix/lib/cdkd.new" "$prefix/lib/cdkd.old"
cp -R "$from/lib/cdkd" "$prefix/lib/cdkd.new"
[ -d "$prefix/lib/cdkd" ] && mv "$prefix/lib/cdkd" "$prefix/lib/cdkd.old"
mv "$prefix/lib/cdkd.new" "$prefix/lib/cdkd"
rm -rf "$prefix/lib/cdkd.old"
if [ -d "$from/share" ]; then
  mkdir -p "$prefix/share"
  cp -R "$from/share/." "$prefix/share/"
fi
# The binary last: a cdkd on PATH never sees a plugins file older than itself.
install -m 755 "$from/bin/cdkd" "$prefix/bin/cdkd.new"
mv -f "$prefix/bin/cdkd.new" "$prefix/bin/cdkd"
count=$(grep -c '^\[\[plugin\]\]' "$prefix/lib/cdkd/plugins.toml" || true)
echo "installed $("$prefix/bin/cdkd" --version) into $prefix: bin/cdkd, lib/cdkd/plugins.toml and $count plugins"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "add $prefix/bin to PATH to run cdkd" ;; esac
