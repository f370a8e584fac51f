# Two commands set up a fresh machine:  `make demo` (install, then scan a bundled example)  and  `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch must be installed before the package: a bare "torch" requirement pulls a CUDA build.
TORCH_SPEC ?= torch==2.13.0
# The newest torch the package admits, with its matching torchvision, in a venv of its own: the suite runs there
# again with the integration tests on real torchvision and transformers models (`make test-torch214`).
VENV214 ?= .venv-torch214
TORCH214_SPEC ?= torch==2.14.1 torchvision==0.29.1
# The newest torch (no torchvision release pairs with it yet): its own venv, the suite with transformers. Installed
# from the registry as it is (a CUDA build, several GB): PIP_CONFIG_FILE=/dev/null leaves out a machine's pip
# configuration (a local wheel folder, a constraint capping torch), which would pick or pin another torch.
VENV215 ?= .venv-torch215
TORCH215_SPEC ?= torch==2.15.0
PIP215 := PIP_CONFIG_FILE=/dev/null $(VENV215)/bin/python -m pip

.PHONY: install install-torch214 install-torch215 demo test test-fast test-torch214 test-torch215 bench kb messages clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[test,ray,onnx]"
	touch $@

install-torch214: $(VENV214)/.installed

$(VENV214)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV214)
	$(VENV214)/bin/python -m pip install --quiet --upgrade pip
	$(VENV214)/bin/python -m pip install --quiet $(TORCH214_SPEC)
	$(VENV214)/bin/python -m pip install --quiet -e ".[test,integration,onnx]"
	touch $@

install-torch215: $(VENV215)/.installed

$(VENV215)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV215)
	$(PIP215) install --quiet --upgrade pip
	$(PIP215) install --quiet $(TORCH215_SPEC)
	$(PIP215) install --quiet -e ".[test,integration,onnx]"
	$(VENV215)/bin/python -c "import torch; assert torch.__version__.startswith('2.15'), torch.__version__"
	touch $@

demo: install
	$(BIN)/opassess scan examples/resnet_like.py

# Each test target prints how long it took (lint, types and the suite), whether it passed or not.
test: install
	@start=$$(date +%s); $(BIN)/ruff check opassess tools benchmarks tests && $(BIN)/python -m mypy && \
	$(BIN)/python -m pytest; status=$$?; echo "make test: $$(( $$(date +%s) - start )) s"; exit $$status

# The inner loop: the suite less the tests marked slow (real CLI runs, Ray, the browser, C++ builds, real models);
# `make test` and CI run everything.
test-fast: install
	@start=$$(date +%s); $(BIN)/ruff check opassess tools benchmarks tests && $(BIN)/python -m pytest -m "not slow"; \
	status=$$?; echo "make test-fast: $$(( $$(date +%s) - start )) s"; exit $$status

test-torch214: install-torch214
	@start=$$(date +%s); $(VENV214)/bin/python -m pytest; status=$$?; \
	echo "make test-torch214: $$(( $$(date +%s) - start )) s"; exit $$status

test-torch215: install-torch215
	@start=$$(date +%s); $(VENV215)/bin/python -m pytest; status=$$?; \
	echo "make test-torch215: $$(( $$(date +%s) - start )) s"; exit $$status

bench: install
	$(BIN)/python benchmarks/bench_scan.py

# The fact tables the knowledge base is generated from: a folder holding ascend/ and gpu/ (`make kb FACTS=DIR`).
FACTS ?= ../shared/reference

kb: install
	$(BIN)/python tools/build_kb.py --facts $(FACTS)/ascend --out opassess/data/kb
	$(BIN)/python tools/kb_devices.py --facts $(FACTS)/ascend --out opassess/data/kb
	$(BIN)/python tools/kb_interconnect.py --facts $(FACTS)/ascend --out opassess/data/kb
	$(BIN)/python tools/kb_gpus.py --facts $(FACTS)/gpu --out opassess/data/kb
	$(BIN)/python tools/kb_gemm.py --out opassess/data/kb
	$(BIN)/python tools/kb_graph.py --facts $(FACTS)/ascend --out opassess/data/kb
	$(BIN)/python tools/kb_versions.py --facts $(FACTS)/ascend --out opassess/data/kb

# Report messages: extract from the code and templates (babel.cfg), then update every catalog's .po (no .mo is kept:
# opassess compiles the .po in memory when it loads it).
messages: install
	mkdir -p build
	$(BIN)/pybabel extract -F babel.cfg -k N_ --no-location --sort-output -o build/opassess.pot .
	$(BIN)/pybabel update -i build/opassess.pot -d opassess/locale -D opassess --width 120 --ignore-obsolete

clean:
	rm -rf $(VENV) $(VENV214) $(VENV215) build dist *.egg-info .pytest_cache .mypy_cache test-artifacts
