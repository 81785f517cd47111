#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with an unlocked GNOME Keyring (the real
# Secret Service), with HOME and XDG dirs in a throw-away folder so nothing touches yours.
# Usage: scripts/with-keyring.sh CMD [ARGS...]
set -euo pipefail
if [ "${HEARTH_IN_KEYRING_SESSION:-}" = 1 ]; then exec "$@"; fi
for tool in dbus-run-session gnome-keyring-daemon; do
  command -v "$tool" >/dev/null || { echo "with-keyring: $tool is missing; run scripts/setup.sh" >&2; exit 1; }
done
sandbox=$(mktemp -d "${TMPDIR:-/tmp}/hearth-keyring.XXXXXX")
# The desktop portal may mount a FUSE file system under XDG_RUNTIME_DIR: unmount it first.
cleanup() {
  local status=$?
  for fm in fusermount3 fusermount; do
    if command -v "$fm" >/dev/null; then "$fm" -uz "$sandbox/runtime/doc" 2>/dev/null || true; fi
  done
  rm -rf "$sandbox" 2>/dev/null || true
  exit "$status"
}
trap cleanup EXIT
mkdir -p "$sandbox/home" "$sandbox/data" "$sandbox/cache" "$sandbox/config" "$sandbox/runtime"
chmod 700 "$sandbox/runtime"
export HEARTH_IN_KEYRING_SESSION=1
# Cargo and rustup live under the real HOME; keep them reachable.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export HOME="$sandbox/home" XDG_DATA_HOME="$sandbox/data" XDG_CACHE_HOME="$sandbox/cache" \
  XDG_CONFIG_HOME="$sandbox/config" XDG_RUNTIME_DIR="$sandbox/runtime"
dbus-run-session -- sh -c 'echo "" | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; exec "$@"' sh "$@"
