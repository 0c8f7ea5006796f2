# Every target installs what it needs by itself.
SHELL := /bin/bash
NODE_MODULES := node_modules/.package-lock.json
JEST := node --experimental-vm-modules node_modules/jest/bin/jest.js

.PHONY: all install build typecheck test unit integration jail-test bench demo doctor clean

all: build

$(NODE_MODULES): package.json package-lock.json
	npm ci
	@touch $@

install: $(NODE_MODULES)

build: $(NODE_MODULES)
	npx tsc -p tsconfig.build.json

typecheck: $(NODE_MODULES)
	npx tsc -p tsconfig.json --noEmit

test: $(NODE_MODULES) typecheck
	$(JEST) --selectProjects unit integration jail

unit: $(NODE_MODULES)
	$(JEST) --selectProjects unit

integration: $(NODE_MODULES)
	$(JEST) --selectProjects integration

jail-test: $(NODE_MODULES)
	$(JEST) --selectProjects jail

bench: $(NODE_MODULES)
	npx tsx bench/invoke.ts

demo: $(NODE_MODULES)
	npx tsx broker/demo/run.ts

clean:
	rm -rf dist
