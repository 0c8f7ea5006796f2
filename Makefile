# Every target installs what it needs by itself.
SHELL := /bin/bash
NODE_MODULES := node_modules/.package-lock.json
# Two test files at a time: one (jest's default, cores - 1) leaves a core idle while its file waits
# on satellites, sockets and the database; with two, both cores are busy throughout (docs/development.md).
JEST_WORKERS ?= 2
JEST := node --experimental-vm-modules node_modules/jest/bin/jest.js --maxWorkers=$(JEST_WORKERS)

.PHONY: sandbox postgres browser all install build typecheck lint format test unit integration jail-test fleet-test browser-test bench demo doctor clean

all: build

$(NODE_MODULES): package.json package-lock.json
	npm ci
	@touch $@

install: $(NODE_MODULES)

# The OS sandbox layer: bubblewrap, libseccomp's Python binding (the syscall filter is
# compiled with it) and a C compiler (the jail launcher). Installed when missing and we
# may (root); otherwise say how.
SANDBOX_PACKAGES := bubblewrap python3-seccomp gcc libc6-dev
sandbox:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	/usr/bin/python3 -c 'import seccomp' >/dev/null 2>&1 || missing="$$missing python3-seccomp"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc libc6-dev"; \
	[ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing:$$missing — run 'sudo apt-get install -y$$missing' (or set TETHER_INSECURE_NO_SANDBOX=1 for no OS sandbox at all)"; exit 1; fi; }

# A throwaway PostgreSQL server for the fleet tests (tests/support/postgres-server.ts,
# docs/fleet-tests.md): initdb, pg_ctl, postgres, pg_isready and psql, from Debian's
# `postgresql` package, and setpriv (the server runs as nobody under root). Installed when
# missing and we may (root) — without Debian's default cluster, which the tests never use;
# otherwise say how.
PG_FOUND = for d in $$(command -v initdb >/dev/null 2>&1 && dirname "$$(readlink -f "$$(command -v initdb)")") /usr/lib/postgresql/*/bin; do \
	  [ -x "$$d/initdb" ] && [ -x "$$d/pg_ctl" ] && [ -x "$$d/postgres" ] && [ -x "$$d/pg_isready" ] && [ -x "$$d/psql" ] && exit 0; \
	done; exit 1
postgres:
	@if [ "$$(id -u)" = 0 ]; then command -v setpriv >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq util-linux; }; fi; \
	( $(PG_FOUND) ) || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common && \
	    sed -i '/^#* *create_main_cluster *=/d' /etc/postgresql-common/createcluster.conf && \
	    echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql && \
	    ( $(PG_FOUND) ) || { echo "the postgresql package did not provide initdb, pg_ctl, postgres, pg_isready and psql under /usr/lib/postgresql/<version>/bin"; exit 1; }; \
	  else echo "missing: the PostgreSQL server (initdb, pg_ctl, postgres) — run 'sudo apt-get install -y postgresql' (the fleet tests start a throwaway one)"; exit 1; fi; }

# A real browser for the browser tests (tests/support/browser.ts, docs/browser-tests.md):
# Debian's `chromium`, driven by playwright-core (which downloads no browser of its own).
# TETHER_CHROMIUM names another binary. Installed when missing and we may (root);
# otherwise say how.
browser:
	@chromium="$${TETHER_CHROMIUM:-/usr/bin/chromium}"; \
	[ -x "$$chromium" ] || { \
	  if [ -n "$$TETHER_CHROMIUM" ]; then echo "TETHER_CHROMIUM=$$TETHER_CHROMIUM is not an executable file (unset it to use Debian's chromium)"; exit 1; \
	  elif [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium || exit 1; \
	    [ -x /usr/bin/chromium ] || { echo "the chromium package did not provide /usr/bin/chromium"; exit 1; }; \
	  else echo "missing: Chromium (/usr/bin/chromium) — run 'sudo apt-get install -y chromium' (or set TETHER_CHROMIUM to a Chromium binary)"; exit 1; fi; }

build: $(NODE_MODULES)
	npm run build

typecheck: $(NODE_MODULES)
	npx tsc -p tsconfig.json --noEmit

# The formatter and the linter (biome.jsonc): a file not formatted, or a lint error, fails. `make format` rewrites.
lint: $(NODE_MODULES)
	npx biome ci .

format: $(NODE_MODULES)
	npx biome format --write .

# dist/ is built first and the tests' spawns of bin/tether.js run it (TETHER_FROM_DIST=1):
# hundreds of spawns each skip tsx's start-up (docs/development.md).
test: $(NODE_MODULES) sandbox postgres browser typecheck lint build
	TETHER_FROM_DIST=1 $(JEST) --selectProjects unit integration jail fleet browser
	bash tests/support/jail-unprivileged.sh

# Some unit tests run SQLite in its database jail: the sandbox layer is needed here too.
unit: $(NODE_MODULES) sandbox
	$(JEST) --selectProjects unit

integration: $(NODE_MODULES) sandbox build
	TETHER_FROM_DIST=1 $(JEST) --selectProjects integration

jail-test: $(NODE_MODULES) sandbox
	$(JEST) --selectProjects jail
	bash tests/support/jail-unprivileged.sh

fleet-test: $(NODE_MODULES) postgres build
	TETHER_FROM_DIST=1 $(JEST) --selectProjects fleet

browser-test: $(NODE_MODULES) browser build
	TETHER_FROM_DIST=1 $(JEST) --selectProjects browser

# dist/ first: the call path's benches and their `tether mcp` children run compiled, as an installed package does.
bench: $(NODE_MODULES) sandbox postgres build
	npx tsx bench/invoke.ts
	npx tsx bench/ledger.ts
	npx tsx bench/db.ts
	npx tsx bench/host-jobs.ts
	npx tsx bench/fleet-revocation.ts
	npx tsx bench/fleet-faults.ts
	npx tsx bench/fleet-ledger.ts
	npx tsx bench/egress.ts
	npx tsx bench/hooks.ts
	npx tsx bench/boot.ts
	npx tsx bench/neighbours.ts
	node dist/bench/call-stages.js
	TETHER_FROM_DIST=1 node dist/bench/vs-mcp.js
	npx tsx bench/scale.ts

# CONSOLE=1: then the operator console over the demo's home for a minute (broker/demo/console.ts).
demo: $(NODE_MODULES) sandbox
	npx tsx broker/demo/run.ts$(if $(CONSOLE), --console)

clean:
	rm -rf dist
