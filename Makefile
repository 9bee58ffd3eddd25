PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-quick bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==25.3
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/trawl demo

test: $(STAMP)
	$(BIN)/pytest -q -n 4

# Everything but the long end-to-end scenarios (the `slow` marker): for the edit-test loop.
test-quick: $(STAMP)
	$(BIN)/pytest -q -n 4 -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/download.py

clean:
	rm -rf $(VENV) data
