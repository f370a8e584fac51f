# Two commands set up a fresh machine:  `make demo` (install, then scan a bundled example)  and  `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch must be installed before the package: a bare "torch" requirement pulls a CUDA build.
TORCH_SPEC ?= torch==2.13.0

.PHONY: install demo test bench kb messages clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[test,ray]"
	touch $@

demo: install
	$(BIN)/opassess scan examples/resnet_like.py

test: install
	$(BIN)/ruff check opassess tools benchmarks tests
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python benchmarks/bench_scan.py

kb: install
	$(BIN)/python tools/build_kb.py --facts ../shared/reference/ascend --out opassess/data/kb

# Report messages: extract from the code and templates (babel.cfg), then update every catalog's .po (no .mo is kept:
# opassess compiles the .po in memory when it loads it).
messages: install
	mkdir -p build
	$(BIN)/pybabel extract -F babel.cfg -k N_ --no-location --sort-output -o build/opassess.pot .
	$(BIN)/pybabel update -i build/opassess.pot -d opassess/locale -D opassess --no-location --width 120 --ignore-obsolete

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache test-artifacts
