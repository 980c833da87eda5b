# Two commands on a fresh machine (Python 3.11 and make only):
#   make course   - create .venv, install everything, execute every lesson, write build/summary.md
#   make test     - create .venv if needed, run the whole test suite (what CI runs)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The exact version of every package installed (pip constraints); `make lock` regenerates it.
LOCK   := requirements.lock
# JupyterLab settings shipped inside the environment (no news pop-up, the course kernel): course_tools/lab.py
LABSET := $(VENV)/share/jupyter/lab/settings/overrides.d/course.json

.PHONY: install course test lab exercises notebooks timing sweep bench clean site test-browser lock

install: $(STAMP) $(LABSET)

# Every install is constrained by the lock: the exact versions CI was run with (course_tools/deps.py).
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip -c $(LOCK)
	# torch first, pinned: this version installs the CPU build from the local disk.
	$(BIN)/python -m pip install --quiet torch==2.13.0 -c $(LOCK)
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[test]"
	touch $(STAMP)

$(LABSET): $(STAMP) course_tools/lab.py
	$(BIN)/course lab --configure-only && touch $@

course: install
	$(BIN)/course run

# Two worker processes (pytest-xdist), each taking whole test files, the longest first (conftest.py);
# the 15 slowest set-ups and tests are listed at the end: where CI's time goes
TEST_WORKERS ?= 2

test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15

lab: install
	$(BIN)/course lab

exercises: install
	$(BIN)/course exercises

notebooks: install
	$(BIN)/course store

timing: install
	$(BIN)/course run --update-readme

sweep: install
	$(BIN)/course sweep --jobs 2 --resume --update-readme

# course BERT vs Hugging Face (forward, a pretraining step) and lesson 25's int8 / ONNX paths:
# build/bench.csv and the table of speed ratios in docs/results.md (about 2 minutes on 2 idle cores)
bench: install
	$(BIN)/course bench --update-readme

# The website and the browser tests need the `site` extra (Jupyter Book, a local MathJax,
# Playwright); the browser is the system's Chromium (apt-get install chromium fonts-noto-cjk). The
# site embeds the Chinese characters it uses from the system's Noto CJK font (fonts-noto-cjk):
# without it, `course site` warns and the site's Chinese needs a CJK font wherever it is read.
SITE_STAMP := $(VENV)/.site-installed

$(SITE_STAMP): $(STAMP) pyproject.toml $(LOCK)
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[test,site]"
	touch $@

site: install $(SITE_STAMP)
	$(BIN)/course site

test-browser: site
	$(BIN)/python -m pytest browser_tests

# After changing dependencies in pyproject.toml: resolve everything afresh in a throwaway venv (the
# core install, then the site extra, as `make install` and `make site` do), freeze it into
# requirements.lock and regenerate environment.yml from pyproject.toml and the lock.
LOCK_VENV := build/lock-venv

lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(LOCK_VENV)/bin/python -m pip install --quiet -e ".[test]"
	$(LOCK_VENV)/bin/python -m pip install --quiet -e ".[test,site]"
	$(LOCK_VENV)/bin/python -m course_tools.deps lock
	rm -rf $(LOCK_VENV)

clean:
	rm -rf build
