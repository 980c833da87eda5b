# Two commands on a fresh machine (Python 3.11 and make only):
#   make course   - create .venv, install everything, execute every lesson, write build/summary.md
#   make test     - create .venv if needed, run the whole test suite (what CI runs)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# JupyterLab settings shipped inside the environment (no news pop-up, the course kernel): course_tools/lab.py
LABSET := $(VENV)/share/jupyter/lab/settings/overrides.d/course.json

.PHONY: install course test lab exercises notebooks timing sweep bench clean site test-browser

install: $(STAMP) $(LABSET)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: this version installs the CPU build from the local disk.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(LABSET): $(STAMP) course_tools/lab.py
	$(BIN)/course lab --configure-only && touch $@

course: install
	$(BIN)/course run

test: install
	$(BIN)/python -m pytest

lab: install
	$(BIN)/course lab

exercises: install
	$(BIN)/course exercises

notebooks: install
	$(BIN)/course store

timing: install
	$(BIN)/course run --update-readme

sweep: install
	$(BIN)/course sweep --jobs 2 --update-readme

# course BERT vs Hugging Face (forward, a pretraining step) and lesson 25's int8 / ONNX paths:
# build/bench.csv and the README's table of speed ratios (about 2 minutes on 2 idle cores)
bench: install
	$(BIN)/course bench --update-readme

# The website and the browser tests need the `site` extra (Jupyter Book, a local MathJax,
# Playwright); the browser is the system's Chromium (apt-get install chromium fonts-noto-cjk).
SITE_STAMP := $(VENV)/.site-installed

$(SITE_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[site]"
	touch $@

site: install $(SITE_STAMP)
	$(BIN)/course site

test-browser: site
	$(BIN)/python -m pytest browser_tests

clean:
	rm -rf build
