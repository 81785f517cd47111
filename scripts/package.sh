#!/usr/bin/env bash
# Builds Hearth's Linux packages (.deb and .rpm) with the Tauri bundler, from binaries the
# build already made: `scripts/package.sh` packages the release build (built first if it is
# missing), `scripts/package.sh --debug` the dev build the tests use (what CI packages).
# Prints the paths of the packages. The bundler comes from npm (@tauri-apps/cli, ui/).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/hearth-target}

profile=release
bundle_flags=()
if [ "${1:-}" = "--debug" ]; then
  profile=debug
  bundle_flags+=(--debug)
fi
bins=(hearth-desktop hearth hearth-llama-worker)
built="$CARGO_TARGET_DIR/$profile"
missing=0
for b in "${bins[@]}"; do [ -x "$built/$b" ] || missing=1; done
if [ "$missing" = 1 ]; then
  if [ "$profile" = debug ]; then
    echo "package: the dev build is missing; run cargo build --workspace first" >&2
    exit 1
  fi
  (cd ui && npm run build >/dev/null)
  cargo build --release -p hearth-desktop -p hearth-cli -p hearth-llama
fi
[ -x ui/node_modules/.bin/tauri ] || (cd ui && npm ci --no-audit --no-fund)

triple=$(rustc -vV | sed -n 's/^host: //p')
# The bundler reads the main binary from <target dir>/<profile>/: point it at a staging
# folder of stripped copies, so the build's own binaries (and their symbols) stay as they are.
stage="$CARGO_TARGET_DIR/package"
rm -rf "$stage"
mkdir -p "$stage/$profile" "$stage/bin"
strip -o "$stage/$profile/hearth-desktop" "$built/hearth-desktop"
# Sidecars: the bundler wants each name with the target triple; they land in /usr/bin.
strip -o "$stage/bin/hearth-$triple" "$built/hearth"
strip -o "$stage/bin/hearth-llama-worker-$triple" "$built/hearth-llama-worker"
gzip -9n -c packaging/linux/changelog > "$stage/changelog.gz"
cat > "$stage/paths.json" <<JSON
{
  "bundle": {
    "externalBin": ["$stage/bin/hearth", "$stage/bin/hearth-llama-worker"],
    "linux": { "deb": { "files": { "/usr/share/doc/hearth/changelog.gz": "$stage/changelog.gz" } } }
  }
}
JSON
(cd src-tauri && CARGO_TARGET_DIR="$stage" "$here/ui/node_modules/.bin/tauri" bundle --ci \
  "${bundle_flags[@]}" --bundles deb,rpm \
  --config tauri.bundle.conf.json --config "$stage/paths.json" >&2)
find "$stage/$profile/bundle" -maxdepth 2 \( -name '*.deb' -o -name '*.rpm' \) | sort
