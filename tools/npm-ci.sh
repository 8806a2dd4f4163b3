#!/usr/bin/env bash
# tools/npm-ci.sh DIR: npm ci in DIR (a package.json with its package-lock.json) when DIR/node_modules
# is missing or older than the lockfile, with --omit=optional (node-llama-cpp's optional GPU builds are
# 650 MB; workerd's postinstall fetches its own platform's binary). The repository's lockfile has the
# tests' packages; bench/'s the peers only make bench measures; tests/runtimes/'s the Deno and Bun
# binaries the npm package's tests run it in.
set -euo pipefail
dir="${1:?usage: tools/npm-ci.sh DIR}"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing (Debian package npm): needed to install $dir/package-lock.json" >&2
  exit 1
fi
if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
  npm ci --prefix "$dir" --omit=optional --no-audit --no-fund
fi
