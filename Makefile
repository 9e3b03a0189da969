# The README's two commands. Each sets up .venv from requirements.txt on a machine
# that has only Python 3 (>= 3.10), then acts. Set-up reruns only when requirements change.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SITE_STAMP := $(VENV)/.site-installed

.PHONY: lab test quick setup bench clean

# JupyterLab refuses to run as root unless told; containers often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/01_logits_to_probabilities.ipynb

# Lint (ruff, configured in pyproject.toml), then every test on every core (pytest-xdist; JOBS=1 for one
# process). --dist loadfile keeps each file, so each notebook's cells and kernel, in one worker. The website's
# tests need its requirements (requirements-site.txt, axe-core): `make test` installs them first.
JOBS ?= auto
test: $(SITE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

# The developer's fast loop: lint, then everything but the tests marked slow (doctests and the notebooks not
# marked slow included). A test not marked slow that takes more than 1 s fails it (tests/conftest.py).
quick: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -m "not slow"

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_verify.py
	$(BIN)/python benchmarks/bench_generate.py
	$(BIN)/python benchmarks/bench_roofline.py
	$(BIN)/python benchmarks/bench_grade.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis _site _build

# The course as a website (docs/README.md): Sphinx, MyST-NB and the Jupyter
# Book theme from requirements-site.txt, added to .venv on first use. Warnings are errors; the
# notebooks are shown with their committed outputs, never run. Output: _site/ (cache: _build/).
# Launch buttons (Binder) only with a public repository: make site REPO_URL=https://github.com/OWNER/REPO
# `make site-check`: every page of the built site at 1400 px and 400 px, light and dark, and under axe-core, in
# headless Chromium: what is cut, unreadable or inaccessible, page by page (tests/test_site_browser.py; needs
# chromium: apt-get install chromium). `make pdf`: the whole course as one PDF, _site/specdec-course.pdf (docs/pdf.py).
.PHONY: site site-setup site-check site-layout pdf
AXE_VERSION := 4.14

site: $(SITE_STAMP)
	SPECDEC_REPO_URL="$(REPO_URL)" SPECDEC_REPO_BRANCH="$(REPO_BRANCH)" $(BIN)/python docs/build.py --out _site
	@echo "site: open _site/index.html"

site-setup: $(SITE_STAMP)

site-check: site
	$(BIN)/python tests/test_site_browser.py _site

site-layout: site-check

pdf: site
	$(BIN)/python docs/pdf.py --out _site/specdec-course.pdf

# axe-core (the browser test's accessibility rules) from the npm registry, into .venv/node_modules.
$(SITE_STAMP): $(STAMP) requirements-site.txt
	$(BIN)/python -m pip install --quiet -r requirements-site.txt
	npm install --silent --no-audit --no-fund --prefix $(VENV) axe-core@$(AXE_VERSION)
	touch $(SITE_STAMP)
