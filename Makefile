# make alone prints this help. Every target installs what it needs first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# bash with pipefail: a failing pip stays a failure when its output is filtered
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.DEFAULT_GOAL := help
.PHONY: help install install-test browser postgres slapd oidc serve test test-sqlite test-postgres lint typecheck bench

help:  ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# pip's own progress is shown (one "Collecting ..." line per package): the first install takes about
# two minutes on a fresh machine and must not look like a hang
$(VENV)/.installed: pyproject.toml
	@echo "make: creating $(VENV) and installing TMS with its test tools from PyPI (first time: about 2 minutes)..."
	python3 -m venv $(VENV)
	$(PIP) install --disable-pip-version-check -q --upgrade pip
	$(PIP) install --disable-pip-version-check --progress-bar on -e '.[test]' | { grep -E --line-buffered '^(Collecting|Successfully installed)' || true; }
	@echo "make: installed into $(VENV)"
	touch $@

install: $(VENV)/.installed  ## create .venv and install tms with its test tools

browser:  ## install Debian's Chromium for the browser tests (no browser download)
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "make: installing Debian's Chromium for the browser tests (apt, ~90 s)..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: installing Chromium needs root or sudo (apt-get install chromium); the browser tests will be skipped"; exit 0; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    && echo "make: Chromium installed: $$(command -v chromium)"; }

postgres:  ## install Debian's PostgreSQL 15 server binaries for the PostgreSQL half of the suite (no Docker)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "make: installing Debian's PostgreSQL 15 for the tests (apt, ~60 s)..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: installing PostgreSQL needs root or sudo (apt-get install postgresql-15)"; exit 1; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null \
	    && echo "make: PostgreSQL installed: $$(ls -d /usr/lib/postgresql/*/bin)"; }

oidc:  ## install the OpenID provider the sign-in tests run on loopback (npm ci --prefix tests/oidc; Node.js 20+)
	@command -v npm >/dev/null 2>&1 || { \
	  echo "make: installing Debian's Node.js and npm for the OpenID Connect tests (apt, ~60 s)..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: installing Node.js needs root or sudo (apt-get install nodejs npm)"; exit 1; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@[ tests/oidc/node_modules/.package-lock.json -nt tests/oidc/package-lock.json ] || { \
	  echo "make: installing the OpenID provider for the tests (npm ci --prefix tests/oidc)..."; \
	  npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error; }

slapd:  ## install Debian's OpenLDAP server (slapd) for the LDAP sign-in tests (tests/ldap_server.py starts it)
	@command -v slapd >/dev/null 2>&1 || [ -x /usr/sbin/slapd ] || { \
	  echo "make: installing Debian's slapd and ldap-utils for the LDAP tests (apt, ~30 s)..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: installing slapd needs root or sudo (apt-get install slapd ldap-utils); the LDAP tests will be skipped"; exit 0; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slapd ldap-utils >/dev/null \
	    && echo "make: slapd installed: /usr/sbin/slapd"; }

serve: install  ## install and start the service with embedded defaults (data in ./data)
	$(VENV)/bin/tms serve

test: install browser postgres slapd oidc  ## install everything, type-check (mypy), then the whole suite on SQLite and on PostgreSQL
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -n 2 --dist loadfile
	TMS_TEST_DATABASE=postgres $(VENV)/bin/pytest -n 2 --dist loadfile

test-sqlite: install browser slapd oidc  ## the suite on SQLite only (two workers, a file per worker)
	$(VENV)/bin/pytest -n 2 --dist loadfile

test-postgres: install browser postgres slapd oidc  ## the suite on a throwaway PostgreSQL cluster only
	TMS_TEST_DATABASE=postgres $(VENV)/bin/pytest -n 2 --dist loadfile

lint: install  ## ruff, the import contracts (.importlinter), then the type checker (make typecheck alone runs only the latter)
	$(VENV)/bin/ruff check tms tests bench docs
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

typecheck: install  ## mypy over tms/ (settings in pyproject.toml)
	$(VENV)/bin/mypy

bench: install  ## run the benchmarks (see bench/README.md)
	$(PY) bench/run_all.py
