# The README's two commands. Each sets up .venv from requirements.txt on a machine
# that has only Python 3 (>= 3.10), then acts. Set-up reruns only when requirements change.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test quick setup bench clean

# JupyterLab refuses to run as root unless told; containers often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/01_logits_to_probabilities.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest

# The developer's fast loop: everything but the tests marked slow (notebooks and doctests included).
quick: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_verify.py
	$(BIN)/python benchmarks/bench_generate.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
