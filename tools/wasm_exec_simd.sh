#!/usr/bin/env bash
# go test -exec wrapper: runs a GOOS=js GOARCH=wasm binary under Node as Go's
# own go_js_wasm_exec does, but with wasmlm's SIMD kernels provided through
# web/simd.js (for builds with -tags wasmlm_simd; others ignore them).
#
#   GOOS=js GOARCH=wasm go test -tags wasmlm_simd -exec "$PWD/tools/wasm_exec_simd.sh" ./engine/tensor/
#
# WASMLM_SIMD=relaxed provides internal/simdgen/kernels-relaxed.wasm's kernels
# (relaxed SIMD) instead, WASMLM_SIMD=off the stubs (the no-SIMD fallback);
# WASMLM_SIMD_WASM names another kernel module than internal/simdgen/kernels.wasm,
# WASMLM_SIMD_RELAXED_WASM another than internal/simdgen/kernels-relaxed.wasm.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export WASMLM_GOROOT="${WASMLM_GOROOT:-$(go env GOROOT)}"
# Node 20 has relaxed SIMD behind a flag (later versions have it by default
# and may not know the flag).
flags=()
if node --experimental-wasm-relaxed-simd -e 0 2>/dev/null; then
  flags+=(--experimental-wasm-relaxed-simd)
fi
# The stack size is go_js_wasm_exec's: V8's default is too small for some tests.
exec node --stack-size=8192 "${flags[@]}" "$dir/wasm_exec_simd.mjs" "$@"
