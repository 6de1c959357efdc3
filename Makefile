# dlbridge: `make demo` and `make test` do all the set-up on a fresh machine
# (a virtualenv with the peers, a release build of the extension) first.
# `make help` lists the targets; `make` alone only sets up the virtualenv.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# One stamp per requirements set: `make demo` installs only what the demo uses
# (requirements-demo.txt), the test and bench targets everything they test
# (requirements-dev.txt, which includes the demo's set).
DEMO_STAMP := $(VENV)/.installed-demo
DEV_STAMP  := $(VENV)/.installed-dev
STAMP      := $(DEV_STAMP)
# The tools' stamps (`make tools`), here since rules' prerequisites expand as
# they are read.
NIGHTLY_STAMP    := target/.nightly-installed-2
CARGO_FUZZ_STAMP := target/.cargo-fuzz-installed-2

.PHONY: help demo build-debuginfo example-pyo3 test bench-quick check test-rust test-python test-asan test-miri fuzz tools bench bench-capi lint build clean

# The packages go in with uv, which downloads and unpacks them in parallel
# and leaves bytecode to the first import: requirements-dev.txt took pip 12
# minutes on 2 cores, uv half a minute. UV_SYSTEM_CERTS: the platform's
# certificates, so a TLS-inspecting proxy's CA there is trusted too.
UV_VERSION := 0.13.9
UV         := UV_SYSTEM_CERTS=1 $(VENV)/bin/uv pip install --python $(PY)

$(VENV)/bin/python:
	@echo "==> creating the virtualenv $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

$(VENV)/bin/uv: | $(VENV)/bin/python
	$(PY) -m pip install uv==$(UV_VERSION)

$(DEMO_STAMP): requirements-demo.txt | $(VENV)/bin/uv
	@echo "==> installing the demo's packages (requirements-demo.txt: NumPy, PyTorch, JAX, maturin; 36 packages, 6.2 GB installed, see README.md)"
	$(UV) -r requirements-demo.txt
	touch $@

$(DEV_STAMP): requirements-dev.txt requirements-demo.txt $(DEMO_STAMP)
	@echo "==> installing the test and bench packages (requirements-dev.txt: pytest, mypy and every peer; about 3 GB more installed)"
	$(UV) -r requirements-dev.txt
	touch $@

## build: compile the extension (release) into the virtualenv
build: $(DEMO_STAMP)
	@echo "==> building the extension (release, LTO; cargo prints each crate)"
	$(VENV)/bin/maturin develop --release

## build-debuginfo: the release build with line tables (debuggers, profilers); `make build` ships it stripped
build-debuginfo: $(DEMO_STAMP)
	$(VENV)/bin/maturin develop --profile release-debuginfo

## demo: the tutorials' flows and a zero-copy round trip with NumPy, PyTorch and JAX
demo: build
	@echo "==> running python/demo.py"
	$(PY) python/demo.py

## test: every test: Rust tests, Miri, bounded fuzz runs, pytest, pytest under ASan
# (pytest runs against real NumPy, PyTorch and JAX), then a quick benchmark run.
# Miri and the fuzz runs (one core each) go on beside the rest: tests/lanes.sh.
test: $(DEV_STAMP) $(NIGHTLY_STAMP)
	MAKE="$(MAKE)" tests/lanes.sh build test-rust test-python test-asan bench-quick

## bench-quick: the exchange benchmark's quick run (that it runs, not its figures)
bench-quick: $(DEV_STAMP)
	$(PY) bench/bench_core.py --quick > /dev/null

## check: the fast subset of `make test`: build, cargo test, pytest (no Miri, fuzz or ASan)
check: $(DEV_STAMP) build test-rust test-python

# pytest's worker processes (pytest-xdist), a test file per worker at a time:
# most tests use one core. `make test-python PYTEST_XDIST=` runs in one process.
PYTEST_XDIST ?= -n auto --maxprocesses 4 --dist loadfile

FUZZ_SECONDS ?= 120

## tools: install the nightly toolchain with Miri and clippy, and cargo-fuzz
# (for test-miri, fuzz, test-asan and the fuzz crate's lint). cargo-fuzz is
# built from source (minutes): only the fuzz runs wait for it, so under
# `make test` it builds in the side lane.
tools: $(NIGHTLY_STAMP) $(CARGO_FUZZ_STAMP)
$(NIGHTLY_STAMP):
	rustup toolchain install nightly --profile minimal --component miri,rust-src,clippy
	mkdir -p target && touch $@
$(CARGO_FUZZ_STAMP): $(NIGHTLY_STAMP)
	cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	mkdir -p target && touch $@

## test-miri: the core's unit tests (no Python, no CUDA) under Miri, bounded in time
test-miri: $(NIGHTLY_STAMP)
	MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-permissive-provenance" \
	  timeout 1200 cargo +nightly miri test --no-default-features --lib

# The fuzz crate links the virtualenv's Python (the capsule target embeds it
# and runs the real extension module): its libpython, and its site-packages
# for NumPy.
FUZZ_ENV = PYO3_PYTHON=$(abspath $(PY)) \
  LD_LIBRARY_PATH=$(shell $(PY) -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))') \
  PYTHONPATH=$(shell $(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

## fuzz: both fuzz targets for FUZZ_SECONDS each (longer: make fuzz FUZZ_SECONDS=3600)
# Foreign-tensor validation and import, through the C ABI (target `import`) and
# through a DLPack capsule into from_dlpack (target `capsule`), each from the
# checked-in corpus. LeakSanitizer is off for `capsule` (it cannot tell
# dlbridge's leaks from Python's start-up allocations); that target checks
# dlbridge's live storages.
fuzz: $(CARGO_FUZZ_STAMP) $(STAMP)
	rm -rf target/fuzz-new && mkdir -p target/fuzz-new/import target/fuzz-new/capsule
	cd fuzz && $(FUZZ_ENV) cargo +nightly fuzz run import ../target/fuzz-new/import corpus/import -- \
	  -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1
	cd fuzz && $(FUZZ_ENV) ASAN_OPTIONS=detect_leaks=0 cargo +nightly fuzz run capsule ../target/fuzz-new/capsule corpus/capsule corpus/import -- \
	  -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1

## test-rust: cargo test (unit, integration and doc tests), the header check, the pyo3 layer's examples, the C-producer example, cargo doc
test-rust:
	cargo test
	cargo test --features capi --test c_header   # include/dlbridge.h must match src/capi/
	cargo test --features pyo3 --doc python      # the pyo3 layer's examples compile
	cargo run --example c_producer               # exits non-zero unless the producer's deleter ran once
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -q
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -q --features pyo3

## example-pyo3: build examples/pyo3-scale (an extension of another crate over the pyo3 layer) into the virtualenv
example-pyo3: $(DEMO_STAMP)
	$(VENV)/bin/maturin develop -q -m examples/pyo3-scale/Cargo.toml

## test-python: pytest on tests/python (the C ABI suite and the pyo3 example included)
test-python: $(DEV_STAMP) build example-pyo3
	$(PY) -m pytest tests/python -q -ra $(PYTEST_XDIST)

## test-asan: the Python suite against an AddressSanitizer build of the extension
# (nightly -Zsanitizer=address; see tests/asan/python_suite.sh)
test-asan: $(NIGHTLY_STAMP) $(STAMP)
	PY=$(PY) tests/asan/python_suite.sh -q -ra $(PYTEST_XDIST)

## bench: the speed and memory report (see bench/README.md), and its pictures in docs/img/
bench: $(DEV_STAMP) build bench-capi
	$(PY) bench/bench_core.py
	$(PY) bench/bench_ops.py
	$(PY) bench/plot.py
	$(PY) bench/bench_pickle.py
	$(PY) bench/bench_shared.py
	$(PY) bench/bench_cuda.py

## bench-capi: the C ABI's import/export cost (release static library)
bench-capi:
	cargo build --release -p dlbridge-capi
	mkdir -p target/cbench
	cc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/bench_capi.c target/release/libdlbridge.a \
	   -ldl -lgcc_s -lutil -lrt -lpthread -lm -o target/cbench/bench_capi
	target/cbench/bench_capi

## lint: cargo fmt --check and clippy for every feature set (and the fuzz crate)
lint: $(NIGHTLY_STAMP) $(STAMP)
	cargo fmt --all -- --check
	cd fuzz && cargo fmt -- --check && $(FUZZ_ENV) cargo +nightly clippy --bins -- -D warnings
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy --features pyo3 -- -D warnings
	cargo clippy --no-default-features --features pyo3 -- -D warnings
	cargo clippy --features capi --all-targets -- -D warnings

## clean: remove target/ and the virtualenv
clean:
	rm -rf target $(VENV)

## help: list the targets with what each does
help:
	@awk '/^## [a-z-]+: / { sub(/^## /, ""); i = index($$0, ": "); \
	  printf "  %-12s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(firstword $(MAKEFILE_LIST))
