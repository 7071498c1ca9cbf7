# The two commands: `make run` starts the platform, `make test` provisions and tests it.
.PHONY: run test lint ci bench

run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

lint:
	cargo fmt --check
	cargo clippy --workspace --all-targets -- -D warnings

ci:
	bash .ci/run
