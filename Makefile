# make alone prints this help. Every target installs what it needs first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# bash with pipefail: a failing pip stays a failure when its output is filtered
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.DEFAULT_GOAL := help
.PHONY: help install install-test system browser postgres slapd oidc serve test test-sqlite test-postgres lint typecheck bench

help:  ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# uv (Astral's installer, from PyPI like ruff) resolves and installs the same packages as pip from
# the same index, in parallel: on the 2-core machine a fresh install took 41 s against pip's 3 min 45 s
# (measured side by side, load 18). pip stays the fallback where no uv wheel exists for the platform.
$(VENV)/.installed: pyproject.toml
	@echo "make: creating $(VENV) and installing TMS with its test tools from PyPI (first time: about a minute)..."
	python3 -m venv $(VENV)
	@if $(PIP) install --disable-pip-version-check -q uv; then \
	  $(VENV)/bin/uv pip install --python $(PY) -e '.[test]'; \
	else \
	  echo "make: uv is not available here; installing with pip (about three minutes)"; \
	  $(PIP) install --disable-pip-version-check --progress-bar on -e '.[test]' | { grep -E --line-buffered '^(Collecting|Successfully installed)' || true; }; \
	fi
	@echo "make: installed into $(VENV)"
	touch $@

install: $(VENV)/.installed  ## create .venv and install tms with its test tools

system:  ## install every Debian package the suite runs for real (Chromium, PostgreSQL 15, slapd, Node.js) in one apt pass
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql-15"; \
	{ command -v slapd >/dev/null 2>&1 || [ -x /usr/sbin/slapd ]; } || missing="$$missing slapd ldap-utils"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	[ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: installing$$missing needs root or sudo; the targets below say what that skips"; exit 0; fi; \
	  echo "make: installing Debian's$$missing for the tests (one apt pass, about two minutes)..."; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
	    && echo "make: installed$$missing"; }

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

# Two workers per half, one per core (--dist loadfile: a file stays on one worker, its module fixtures
# start servers once). `make test WORKERS=4` still works.
WORKERS ?= 2
# The two halves run side by side, with mypy beside them: one half alone kept the two cores ~65% busy
# (its tests wait on servers, sockets, mail and the browser), so one after the other left a third of
# the machine idle for ~13 minutes. The SQLite half prints as it goes; mypy's and the PostgreSQL half's
# output wait in $(TEST_LOGS) and are printed when they end. `make test SIDE_BY_SIDE=0` runs them in turn.
SIDE_BY_SIDE ?= 1
TEST_LOGS ?= .test-logs
PYTEST_HALF := $(VENV)/bin/pytest -n $(WORKERS) --dist loadfile

test: install system browser postgres slapd oidc  ## install everything, then mypy and the whole suite on SQLite and on PostgreSQL, side by side
ifeq ($(SIDE_BY_SIDE),1)
	@mkdir -p $(TEST_LOGS); \
	$(VENV)/bin/mypy > $(TEST_LOGS)/mypy.log 2>&1 & mypy=$$!; \
	TMS_TEST_DATABASE=postgres $(PYTEST_HALF) -p no:cacheprovider > $(TEST_LOGS)/postgres.log 2>&1 & postgres=$$!; \
	trap 'kill $$mypy $$postgres 2>/dev/null' INT TERM; \
	echo "make test: mypy and the PostgreSQL half run in the background (output in $(TEST_LOGS)/, printed at the end)"; \
	echo "make test: the SQLite half:"; \
	$(PYTEST_HALF); sqlite_status=$$?; \
	wait $$mypy; mypy_status=$$?; echo "make test: mypy:"; cat $(TEST_LOGS)/mypy.log; \
	echo "make test: the PostgreSQL half (waiting for it to end)..."; \
	wait $$postgres; postgres_status=$$?; cat $(TEST_LOGS)/postgres.log; \
	echo "make test: exit status mypy $$mypy_status, SQLite $$sqlite_status, PostgreSQL $$postgres_status (0 = passed)"; \
	[ $$mypy_status -eq 0 ] && [ $$sqlite_status -eq 0 ] && [ $$postgres_status -eq 0 ]
else
	$(VENV)/bin/mypy
	$(PYTEST_HALF)
	TMS_TEST_DATABASE=postgres $(PYTEST_HALF)
endif

test-sqlite: install system browser slapd oidc  ## the suite on SQLite only (two workers, a file per worker)
	$(PYTEST_HALF)

test-postgres: install system browser postgres slapd oidc  ## the suite on a throwaway PostgreSQL cluster only
	TMS_TEST_DATABASE=postgres $(PYTEST_HALF)

lint: install  ## ruff, the import contracts (.importlinter), then the type checker (make typecheck alone runs only the latter)
	$(VENV)/bin/ruff check tms tests bench docs
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

typecheck: install  ## mypy over tms/ (settings in pyproject.toml)
	$(VENV)/bin/mypy

bench: install  ## run the benchmarks (see bench/README.md)
	$(PY) bench/run_all.py
