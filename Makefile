# The README's two commands: `make serve` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
BUNDLE ?= examples/campaign
DB := build/$(notdir $(patsubst %/,%,$(BUNDLE))).db
PORT ?= 8001

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,mcp]'
	touch $@

.PHONY: setup build serve test
setup: $(BIN)/.installed

build: setup
	$(BIN)/datasette okf build $(BUNDLE) -o $(DB)

serve: build
	$(BIN)/datasette serve $(DB) --metadata metadata.yml --host 127.0.0.1 --port $(PORT)

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
