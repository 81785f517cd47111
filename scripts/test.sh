#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (with the real Secret Service in a private
# D-Bus session), the UI in Chromium, and the real app under Xvfb through WebDriver.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/hearth-target}
export PATH="$HOME/.cargo/bin:$PATH"

echo "== UI build"
(cd ui && npm run build >/dev/null)

echo "== Rust tests (core, CLI, shell)"
scripts/with-keyring.sh cargo test --workspace --exclude hearth-e2e --all-targets

echo "== Benchmarks compile"
cargo bench -p hearth-core --no-run

echo "== UI tests in Chromium"
(cd ui && npm test)

echo "== End-to-end: the real app under Xvfb"
cargo build -p hearth-desktop -p hearth-cli
scripts/with-keyring.sh xvfb-run -a -s "-screen 0 1280x800x24" cargo test -p hearth-e2e -- --test-threads=1
