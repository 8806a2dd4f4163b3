#!/usr/bin/env bash
# go test -exec wrapper: runs a GOOS=js GOARCH=wasm binary under Node as Go's
# own go_js_wasm_exec does, but with wasmlm's SIMD kernels provided through
# web/simd.js (for builds with -tags wasmlm_simd; others ignore them).
#
#   GOOS=js GOARCH=wasm go test -tags wasmlm_simd -exec "$PWD/tools/wasm_exec_simd.sh" ./engine/tensor/
#
# WASMLM_SIMD=off provides the stubs instead (the no-SIMD fallback);
# WASMLM_SIMD_WASM names another kernel module than internal/simdgen/kernels.wasm.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export WASMLM_GOROOT="${WASMLM_GOROOT:-$(go env GOROOT)}"
# The stack size is go_js_wasm_exec's: V8's default is too small for some tests.
exec node --stack-size=8192 "$dir/wasm_exec_simd.mjs" "$@"
