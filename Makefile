# opendcn — the two commands: `make demo` and `make test`.
PY      ?= python3.11
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test install build test-rust test-python bench clean

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

test: install test-rust test-python

test-rust:
	cargo test --release -p opendcn-core

# The test suite, then the docstring examples of the installed package (--pyargs: the
# copy that has the compiled core, whether installed from a wheel or in develop mode).
test-python: install
	$(VPY) -m pytest tests
	$(VPY) -m pytest --doctest-modules --pyargs opendcn

bench: install
	$(VENV)/bin/opendcn bench

clean:
	rm -rf $(VENV) target results
