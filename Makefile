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
	$(BIN)/datasette-okf build $(BUNDLE) -o $(DB)

# The example is built, then served. Your own BUNDLE is served as soon as its text is in (seconds), its vectors
# computed behind, and every save rebuilt while you work (datasette okf build --watch --serve).
ifeq ($(BUNDLE),examples/campaign)
serve: build
	$(BIN)/datasette serve $(DB) --metadata metadata.yml --host 127.0.0.1 --port $(PORT)
else
serve: setup
	$(BIN)/datasette okf build $(BUNDLE) -o $(DB) --watch --serve --host 127.0.0.1 --port $(PORT) --metadata metadata.yml
endif

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
