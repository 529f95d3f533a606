# Two commands: `make play` plays a werewolf game with the offline players; `make test` runs every test.
# Each creates (or reuses) the virtual environment in .venv and installs what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,notebooks]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

.PHONY: install play test bench example
install: $(STAMP)

play: $(STAMP)
	$(PY) -m toolkit play $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q $(ARGS)

bench: $(STAMP)
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The example study under results/examples/: a tournament (its tables, without calls, kept in
# results/examples/tables/), the engineer sweep, then the reports (PNGs + summary.md).
example: $(STAMP)
	rm -rf results/examples-tournament results/examples-engineer results/examples/tables
	$(PY) -m toolkit tournament experiments/tournaments/example.yaml --workers 2 --export results/examples/tables
	$(PY) -m toolkit sweep experiments/sweeps/engineer.yaml --workers 2
	$(PY) -m toolkit report results/examples/tables --out results/examples
	$(PY) -m toolkit report results/examples-engineer --out results/examples/engineer
