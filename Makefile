# The two commands: `make run` starts the platform, `make test` provisions and tests it.
.PHONY: run test faults lint ci bench

run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

# Only the fault tests (kill -9 of every service, RabbitMQ down, PostgreSQL restarted, S3 down).
faults:
	bash scripts/test.sh faults

lint:
	cargo fmt --check
	cargo clippy --workspace --all-targets -- -D warnings

ci:
	bash .ci/run
