#!/usr/bin/env bash
# Installs the prompt-injection corpus the tool-gate tests run (bastioncorpus, from PyPI) and
# prints the path of its injections.jsonl. Idempotent: does nothing when it is already there.
#   scripts/fetch-corpus.sh [DIR]     (DIR defaults to ~/.cache/hearth-corpora/bastioncorpus)
# Tests find it through HEARTH_INJECTION_CORPUS, or in the default DIR:
#   export HEARTH_INJECTION_CORPUS=$(scripts/fetch-corpus.sh)
set -euo pipefail

package=bastioncorpus==0.6.0
# injections.jsonl of that release (the counts in the notes were taken from it).
sha256=b1aaa009aad34df7fb2c4f499cdb936875b97da23a7452caaeb4b94aff2bfd12

dir=${1:-$HOME/.cache/hearth-corpora/bastioncorpus}
corpus="$dir/bastioncorpus/corpus/injections.jsonl"

die() { echo "fetch-corpus: $*" >&2; exit 1; }

if [ ! -f "$corpus" ]; then
  command -v python3 >/dev/null || die "python3 is needed to install $package with pip"
  python3 -m pip --version >/dev/null 2>&1 || die "pip is missing (Debian: apt-get install python3-pip)"
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.partial.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-corpus: installing $package into $dir" >&2
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$tmp" "$package" >&2 || die "pip could not install $package"
  [ -f "$tmp/bastioncorpus/corpus/injections.jsonl" ] || die "$package has no corpus/injections.jsonl"
  actual=$(sha256sum "$tmp/bastioncorpus/corpus/injections.jsonl" | cut -d' ' -f1)
  [ "$actual" = "$sha256" ] || die "injections.jsonl has sha256 $actual, expected $sha256"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi

echo "$corpus"
