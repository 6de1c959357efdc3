# dlbridge: `make demo` and `make test` do all the set-up on a fresh machine
# (a virtualenv with the peers, a release build of the extension) first.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-rust test-python bench bench-capi lint build clean

$(STAMP): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

## build: compile the extension (release) into the virtualenv
build: $(STAMP)
	$(VENV)/bin/maturin develop --release -q

## demo: the seeds' flows and a zero-copy round trip with every installed framework
demo: build
	$(PY) python/demo.py

## test: every test (Rust unit tests, then pytest against real NumPy, PyTorch and JAX)
test: build test-rust test-python
	$(PY) bench/bench_core.py --quick > /dev/null

test-rust:
	cargo test
	cargo test --features capi --test c_header   # include/dlbridge.h must match src/capi/

test-python: build
	$(PY) -m pytest tests/python -q -ra

## bench: the speed and memory report (see bench/README.md)
bench: build bench-capi
	$(PY) bench/bench_core.py
	$(PY) bench/bench_cuda.py

## bench-capi: the C ABI's import/export cost (release static library)
bench-capi:
	cargo build --release --features capi
	mkdir -p target/cbench
	cc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/bench_capi.c target/release/libdlbridge.a \
	   -ldl -lgcc_s -lutil -lrt -lpthread -lm -o target/cbench/bench_capi
	target/cbench/bench_capi

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --features python -- -D warnings
	cargo clippy --no-default-features --features python -- -D warnings
	cargo clippy --features capi --all-targets -- -D warnings

clean:
	rm -rf target $(VENV)
