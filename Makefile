# stackmark: `make demo` and `make test` set everything up on a fresh
# Debian 12 machine (as root) and are fast when it is already set up.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
APT_PACKAGES := gcc g++ make binutils gdb lldb-19 python3-lldb-19 llvm-19 llvm-22 clang-19 \
                elfutils debuginfod \
                gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static libc6-dbg dwz \
                neovim chromium ripgrep libkrb5-dev tmux linux-headers-amd64 tcl
SYS_STAMP := $(VENV)/.system-packages
PY_STAMP  := $(VENV)/.python-packages

.PHONY: all setup editors-setup demo test lint typecheck pytest bench clean fuzz conformance \
        conformance-llvm conformance-binutils

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

setup: $(SYS_STAMP) $(PY_STAMP) editors-setup

# The editors the tests drive (code-server, playwright-core; npm ci from lock files).
editors-setup: $(SYS_STAMP)
	@bash tests/editors/setup.sh

# --- the two commands ---------------------------------------------------------

demo: setup
	@$(MAKE) -s -C examples demo PY=$(abspath $(PY))

test: setup lint typecheck pytest

lint: setup
	$(VENV)/bin/ruff check .

typecheck: setup
	$(VENV)/bin/mypy

pytest: setup
	$(VENV)/bin/pytest -q -ra $(PYTEST_ARGS)

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
	$(MAKE) -s -C examples clean
