#!/usr/bin/env bash
# Builds cdkd and its bundled provider plugins and installs them where the installed binary
# finds them by itself:
#   PREFIX/bin/cdkd
#   PREFIX/lib/cdkd/plugins/lib*.so
#   PREFIX/lib/cdkd/plugins.toml   (the bundled plugins file, paths relative to it)
# Usage: bash install.sh [PREFIX]     (default: ~/.local)
# CDKD_INSTALL_PROFILE=debug installs the debug build instead of a release build.
# Your own plugins go in $XDG_CONFIG_HOME/cdkd/plugins.toml (layered over the installed file).
set -euo pipefail
repo=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-$HOME/.local}
profile=${CDKD_INSTALL_PROFILE:-release}
cd "$repo"
# The plugins of the bundled file: name and library file.
mapfile -t entries < <(awk -F'"' '/^name = /{name=$2} /^path = /{n=split($2, parts, "/"); print name " " parts[n]}' plugins.toml)
flags=()
[ "$profile" = release ] && flags=(--release)
# The whole workspace, not `-p` per plugin: a narrower package set resolves other features for
# the shared AWS SDK crates and would compile them all a second time beside the workspace build.
cargo build "${flags[@]}" --workspace
mkdir -p "$prefix/bin" "$prefix/lib/cdkd/plugins"
install -m 755 "target/$profile/cdkd" "$prefix/bin/cdkd"
for entry in "${entries[@]}"; do
  install -m 755 "target/$profile/${entry#* }" "$prefix/lib/cdkd/plugins/${entry#* }"
done
{
  echo "# The plugins installed with cdkd; paths are relative to this file's folder."
  echo "# Add or replace plugins in \$XDG_CONFIG_HOME/cdkd/plugins.toml instead of editing this file."
  sed -e '/^#/d' -e 's|path = "target/${profile}/|path = "plugins/|' plugins.toml
} >"$prefix/lib/cdkd/plugins.toml"
echo "installed cdkd ($profile) into $prefix: bin/cdkd, lib/cdkd/plugins.toml and ${#entries[@]} plugins"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "add $prefix/bin to PATH to run cdkd" ;; esac
