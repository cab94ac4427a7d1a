# The two commands of the README: `make run` and `make test`. `make check` is the fast tier (lint and the
# tests not marked slow, browser or worker); `make smoke` starts the production processes and drives them.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/nqdc
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: run test check smoke venv lint bench clean
# Models against migrations: the autodetector reads no database, so it is given an in-memory one (the development
# database named by DATABASE_URL need not exist, and Django warned on every run when it did not).
MIGRATIONS_CHECK = env DATABASE_URL=sqlite://:memory: TESTING=true $(PY) manage.py makemigrations --check --dry-run

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is needed (Python 3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet ".[test]"
	rm -rf build *.egg-info
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

venv: $(STAMP)

## make run: set up (venv, migrations, plan catalog, demo population) and start web, worker and beat.
## Without DATABASE_URL/REDIS_URL it uses SQLite and kombu's filesystem broker under var/.
run: $(STAMP)
	DEBUG=$${DEBUG:-true} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-true} $(PY) manage.py load_catalog
	DEBUG=$${DEBUG:-true} $(PY) manage.py sync_schedules
	DEBUG=$${DEBUG:-true} $(PY) manage.py load_demo
	DEBUG=$${DEBUG:-true} $(PY) scripts/run_all.py --host $(HOST) --port $(PORT)

## make test: the whole suite against PostgreSQL and Redis; stops at once if either is unreachable.
test: $(STAMP) lint
	@DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} $(PY) scripts/check_services.py
	$(MIGRATIONS_CHECK) > /dev/null
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} TESTING=true \
		$(PY) -m pytest $(PYTEST_ARGS)

## make check: the fast tier, for every change: lint and every test not marked slow, browser or worker
## (under 3 minutes on a two-core machine), on CHECK_WORKERS pytest-xdist processes (2; each its own test
## database and MEDIA_ROOT; --dist loadgroup with one group per test class, tests/conftest.py).
## The lint steps and `makemigrations --check` run one after another beside the tests (scripts/beside.py),
## their output printed after the tests'; `make check` fails if any step or test fails.
## `make test` stays the whole suite, serial, with lint before it.
CHECK_WORKERS ?= 2
# Python writes its bytecode cache (__pycache__, ignored by git) for the tests, even where the environment says not
# to (PYTHONDONTWRITEBYTECODE=1, as in many container images): without it every process compiles the app anew and
# pytest rewrites the asserts of every test module again, some 9 of the 15 CPU seconds each xdist process spends
# collecting the tests, every run.
check test: export PYTHONDONTWRITEBYTECODE :=
CHECK_ENV = DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)}
check: $(STAMP)
	@$(CHECK_ENV) $(PY) scripts/check_services.py
	$(CHECK_ENV) TESTING=true $(PY) scripts/beside.py \
		--step "$(PY) -m ruff check ." --step "$(PY) -m ruff format --check ." --step "$(PY) -m mypy" \
		--step "$(VENV)/bin/lint-imports" --step "$(MIGRATIONS_CHECK)" \
		-- $(PY) -m pytest -m "not slow and not browser and not worker" \
		-n $(CHECK_WORKERS) --dist loadgroup $(PYTEST_ARGS)

## make smoke: gunicorn (DEBUG=false, whitenoise), a Celery worker and beat against PostgreSQL and Redis, started
## as docker-compose.yml starts them; signs in, loads a portal and a staff page and their static files, credits a
## day through the worker, and stops everything it started. Its own database (SMOKE_DATABASE_NAME) and port.
smoke: $(STAMP)
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(PY) scripts/smoke.py

lint: $(STAMP)  # `make check` runs the same steps beside its tests (scripts/beside.py)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports  # the layers of pyproject.toml [tool.importlinter]: arrows point down

bench: $(STAMP)
	DEBUG=$${DEBUG:-true} DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(PY) manage.py bench crediting --participants $${N:-100000}

clean:
	rm -rf $(VENV) var
