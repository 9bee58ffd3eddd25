PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-quick bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==25.3
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=compat  # see EDITABLE below
	$(BIN)/pip uninstall --quiet --yes selenium trio trio-websocket 2>/dev/null || true  # an environment made before
	$(BIN)/pip install --quiet --no-deps --upgrade --target $(VENV)/browser-tests \
		$$($(BIN)/python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['browser-tests'])")
	$(BYTECODE)
	touch $(STAMP)

# EDITABLE: the checkout goes on sys.path by a .pth line, as an installed trawl is found, not by
# setuptools' default import hook: that hook imported pathlib, importlib.util and fnmatch in every
# process's start, 20-24 ms of each `trawl` command here (python -X importtime, 2026-12-07),
# which a person's `pip install trawl` never pays and the start-up benches would have counted.
# setuptools calls this mode transitional (it works with the pinned setuptools 80.9.0); the price
# is the checkout's root on sys.path (tests, bench importable by name). Without the setting, the
# default hook comes back and only the start-up figures change.
# An editable install has no bytecode (pip compiles only what it copies), and with
# PYTHONDONTWRITEBYTECODE set none is ever written: every process, and the workflow sandbox for
# every item it starts, would compile trawl's modules from source. Written here, read by all;
# a module edited since is compiled from source until the next `make`.
BYTECODE = $(BIN)/python -m compileall -q -j 0 trawl tests bench >/dev/null
# pytest rewrites every test module's asserts as it collects, and keeps the result only where
# bytecode may be written: without it each test process spent about 7 s of CPU more collecting
# (10.5 s against 3.7 s here).
PYTEST = PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

# Ports: make demo DEMO_ARGS="--sim-port 19000" (the simulators'); the Temporal server's, the
# Web UI's and the API's through TRAWL_TEMPORAL__ADDRESS, TRAWL_TEMPORAL__UI_PORT, TRAWL_API__PORT.
DEMO_ARGS ?=
demo: $(STAMP)
	$(BYTECODE)
	$(BIN)/trawl demo $(DEMO_ARGS)

test: $(STAMP)
	$(BYTECODE)
	$(PYTEST) -q -n 6 --dist worksteal --durations=25

# Everything but the long end-to-end scenarios (the `slow` marker): for the edit-test loop.
test-quick: $(STAMP)
	$(BYTECODE)
	$(PYTEST) -q -n 6 --dist worksteal -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/download.py

clean:
	rm -rf $(VENV) data
