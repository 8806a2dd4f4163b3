#!/usr/bin/env bash
# Installs what `make test` needs beyond Go, when it is missing:
#   node/npm  (Debian packages nodejs, npm)  — wasm tests under Node, npm ci
#   node_modules from package-lock.json      — reference tokenizers, workerd, miniflare, openai, the AI SDK and
#                                              LangChain.js, bundlers, and llama.cpp (node-llama-cpp with its CPU
#                                              binary: the parity tests and make bench run it)
#   Chromium  (Debian package chromium)      — the browser e2e tests
#   QEMU      (Debian package qemu-user-static, on x86-64) — the arm64 kernels' tests
#   curl      (Debian package curl)          — the e2e tests run the README's curl examples
#   a C compiler (Debian package gcc)        — go test -race (make test-race) needs cgo
# System packages are installed with apt-get when running as root on Debian;
# otherwise the script names the package to install and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: $*"
    if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "make test needs the Debian package(s): $* (install them, e.g. sudo apt-get install $*)" >&2
    exit 1
  fi
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi

if ! command -v curl >/dev/null 2>&1; then
  apt_install curl
fi

# npm ci when node_modules is missing or older than the lockfile. --omit=optional
# leaves out node-llama-cpp's optional GPU builds (CUDA, Vulkan: 650 MB); its CPU
# binary is a direct dependency, and workerd's postinstall fetches its own
# platform's binary, an optional dependency too, from the registry. Deno and Bun
# (tests/runtimes/) are installed by make test-e2e-npm, wllama (bench/) by make bench.
tools/npm-ci.sh .

# The browser tests use $CHROME_PATH when set, else the first of these on
# PATH: find_chrome is internal/headless's Path, and chrome_names its
# Names in the same order (internal/headless's tests keep them equal).
chrome_names="chromium chromium-browser google-chrome google-chrome-stable headless_shell"
find_chrome() {
  if [ -n "${CHROME_PATH:-}" ]; then echo "$CHROME_PATH"; return 0; fi
  local name
  for name in $chrome_names; do
    if command -v "$name"; then return 0; fi
  done
  return 1
}
if ! find_chrome >/dev/null; then
  apt_install chromium
fi

# The race detector (make test-race) links through cgo, which Go turns off
# where no C compiler is found.
if ! command -v gcc >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1; then
  apt_install gcc
fi

# The arm64 tests (make test-arm64) run the arm64 test binaries under QEMU's
# user-mode emulator on an x86-64 machine.
if [ "$(uname -m)" = x86_64 ] && ! command -v qemu-aarch64-static >/dev/null 2>&1; then
  apt_install qemu-user-static
fi
