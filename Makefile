# make alone prints this help. Every target installs what it needs first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.DEFAULT_GOAL := help
.PHONY: help install install-test browser serve test lint typecheck bench

help:  ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed  ## create .venv and install tms with its test tools

browser:  ## install Debian's Chromium for the browser tests (no browser download)
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "make: installing Debian's Chromium for the browser tests (apt, ~90 s)..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: installing Chromium needs root or sudo (apt-get install chromium); the browser tests will be skipped"; exit 0; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    && echo "make: Chromium installed: $$(command -v chromium)"; }

serve: install  ## install and start the service with embedded defaults (data in ./data)
	$(VENV)/bin/tms serve

test: install browser  ## install everything, type-check (mypy), then run the whole suite (two workers)
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -n 2 --dist loadfile

lint: install  ## ruff, then the type checker (make typecheck alone runs only the latter)
	$(VENV)/bin/ruff check tms tests bench docs
	$(VENV)/bin/mypy

typecheck: install  ## mypy over tms/ (settings in pyproject.toml)
	$(VENV)/bin/mypy

bench: install  ## run the benchmarks (see bench/README.md)
	$(PY) bench/run_all.py
