# opendcn — the two commands: `make demo` and `make test`.
PY      ?= python3.11
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test test-long install build test-rust test-rust-long test-python test-python-long bench clean

$(VPY):
	@command -v $(PY) >/dev/null 2>&1 || { echo "python3.11 not found; set PY=/path/to/python3.11"; exit 1; }
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

# Install the package with its compiled core in release mode (re-run when sources change).
$(STAMP): $(VPY) pyproject.toml Cargo.toml $(shell find crates python -type f \( -name '*.rs' -o -name '*.py' -o -name '*.pyi' -o -name 'Cargo.toml' -o -name '*.cdf' -o -name '*.md' \) 2>/dev/null)
	$(VPY) -m pip install -q "maturin==1.16.0"
	$(VPY) -m pip install -q ".[test]"
	@touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/opendcn demo --out results

# `make test`: what CI runs, within minutes on 2 cores. `make test-long`: everything, also
# the tests marked `long` (scenarios too large for `make test`) and the measuring kernels' build.
test: install test-rust test-python

test-long: install test-rust-long test-python-long

# The engine's unit tests (the library's test harness and any doc tests; the measuring
# kernels, benches/floors, are built by test-rust-long). The library itself was built for
# the install in the same profile,
# so the doc tests reuse it.
test-rust:
	cargo test --release -p opendcn-core --lib --tests
	cargo test --release -p opendcn-core --doc

test-rust-long: test-rust
	cargo build --release -p opendcn-floors

# The test suite and the docstring examples of the installed package (its directory: the copy
# that has the compiled core, whether installed from a wheel or in develop mode), in one
# pytest run on PYTEST_WORKERS processes (pytest-xdist). --dist loadscope gives each worker
# whole test modules, so that a module-scoped fixture (often a batch of CLI runs in a thread
# pool) is built once, not once per worker. (--dist loadgroup with xdist_group marks made no
# groups with pytest 9.2 and pytest-xdist 3.8.0.)
PYTEST_WORKERS ?= 2
PYTEST := $(VPY) -m pytest -n $(PYTEST_WORKERS) --dist loadscope
PKGDIR = $$($(VPY) -c 'import opendcn, os; print(os.path.dirname(opendcn.__file__))')

test-python: install
	$(PYTEST) -m "not long" tests --doctest-modules $(PKGDIR)

test-python-long: install
	$(PYTEST) tests --doctest-modules $(PKGDIR)

bench: install
	$(VENV)/bin/opendcn bench

clean:
	rm -rf $(VENV) target results
