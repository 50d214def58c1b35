# rath: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
# Integration tests (bubblewrap, the npm MCP server, Chromium) sit behind
# this tag; `make test` always sets it so nothing real is skipped.
TAGS := integration

.PHONY: all build demo test deps vet lint bench fleetbench fuzz soak clean

all: build

# -trimpath keeps the checkout's directory out of the binary and so out of
# the build cache's keys: a second checkout (the README test's fresh clone)
# reuses every compiled package and only links.
build:
	$(GO) build -trimpath -buildvcs=auto -o bin/rath ./cmd/rath

# demo runs the offline multi-agent demo (scripted model turns, real
# tools, sandbox, events, memory and replay) in ./.rath-demo.
demo: build
	bin/rath demo

MCP_FIXTURE := flow/mcptool/testdata/server-everything
# The official OpenSandbox TypeScript SDK, run against the in-repo test
# server (sandbox/opensandbox/sdk_test.go).
OSB_SDK := sandbox/opensandbox/testdata/sdk

# deps installs what the integration tests need on a fresh machine:
# bubblewrap, Chromium (the dossier's browser test), PostgreSQL (throwaway
# test servers) and node/npm (Debian packages), the npm MCP test server and
# the official OpenSandbox TypeScript SDK; openssl and Debian's Python
# securesystemslib check attested run bundles the way an auditor would
# (bundle/bundle_integration_test.go).
#
# go mod graph fetches the go.mod of every module version in rath's
# requirement graph: a build reads only those it selects, but the README
# quickstart's test builds a module of its own offline (GOPROXY=off),
# which reads them all (cmd/rath/cli/readme_test.go).
deps: $(MCP_FIXTURE)/node_modules/.package-lock.json $(OSB_SDK)/node_modules/.package-lock.json
	@$(GO) mod graph >/dev/null
	@command -v bwrap >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1 && \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1 && \
	  /usr/bin/python3 -c 'import securesystemslib' >/dev/null 2>&1 || { \
	  echo "installing bubblewrap, chromium, postgresql, openssl and python3-securesystemslib (apt-get)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq bubblewrap chromium postgresql openssl python3-securesystemslib >/dev/null; }

$(MCP_FIXTURE)/node_modules/.package-lock.json: $(MCP_FIXTURE)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing nodejs and npm (apt-get)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq nodejs npm >/dev/null; }
	cd $(MCP_FIXTURE) && npm ci --no-audit --no-fund

$(OSB_SDK)/node_modules/.package-lock.json: $(OSB_SDK)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing nodejs and npm (apt-get)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq nodejs npm >/dev/null; }
	cd $(OSB_SDK) && npm ci --no-audit --no-fund

# cmd/rathverify is a module of its own (auditors go run it by version),
# outside ./... of the rath module.
vet:
	$(GO) vet -tags $(TAGS) ./...
	cd cmd/rathverify && $(GO) vet ./...

# test runs the whole suite with the race detector, except one package:
# cmd/rath/cli's tests run the rath command as hundreds of child
# processes, and under -race every one of them is instrumented, which
# made that package alone a third of the suite's CPU. The code those
# processes run is tested with -race in its own packages; the CLI package
# runs without it, side by side with the rest, and its output follows.
#
# The packages whose tests run rath as a separate process use bin/rath,
# built once here, instead of each linking its own (internal/rathbin).
CLI_PKG := github.com/gorath/rath/cmd/rath/cli
# Test binaries are linked without DWARF (-ldflags=-w): nothing reads it
# (stack traces and race reports use the symbol table), and linking some
# sixty race-instrumented binaries is a good part of the suite's CPU on a
# 2-core machine. -trimpath keeps the checkout's directory out of the
# build cache's keys, as for bin/rath: a checkout elsewhere (CI's clean
# one) reuses the packages compiled for another instead of compiling
# every one of rath's again.
TEST_FLAGS := -trimpath -ldflags=-w
# go vet's full set of analyzers runs in make lint; go test runs its
# high-confidence subset on every package it tests. A separate vet here
# type-checked and compiled every package once more: about 50 s of a
# cold make test's wall time on 2 cores, where CI allows 20 minutes.
test: deps build
	@export RATH_TEST_BINARY=$(CURDIR)/bin/rath; \
	$(GO) test $(TEST_FLAGS) -tags $(TAGS) -timeout 20m $(CLI_PKG) > .test-cli.log 2>&1 & cli=$$!; \
	$(GO) test -race $(TEST_FLAGS) -tags $(TAGS) -timeout 20m $$($(GO) list -tags $(TAGS) ./... | grep -vx '$(CLI_PKG)'); rc=$$?; \
	wait $$cli; crc=$$?; cat .test-cli.log; rm -f .test-cli.log; \
	test $$rc -eq 0 && test $$crc -eq 0

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: vet $(TOOLS)/staticcheck
	@out=$$(gofmt -l . | grep -v '^node_modules/'); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(TOOLS)/staticcheck -tags $(TAGS) ./...

# bench runs every benchmark once, one package at a time (-p 1: packages
# measured side by side would share the 2 cores); the README's
# Performance section quotes its output.
bench: fleetbench
	$(GO) test -p 1 -tags $(TAGS) -run '^$$' -bench . -benchtime 2s -count 1 ./...

# fleetbench measures the fleet end to end on a throwaway PostgreSQL
# (cmd/fleetbench; docs/PERFORMANCE.md quotes it), on loopback and with
# PostgreSQL 0.5 ms and 2 ms away each way (a delaying proxy,
# internal/netdelay): FLEETBENCH_FLAGS changes its size, e.g.
# FLEETBENCH_FLAGS='-runs 50 -rounds 3 -pg-delay 0'.
FLEETBENCH_FLAGS ?= -runs 200 -rounds 5 -workers 1,4 -pg-delay 0,0.5ms,2ms
fleetbench: build
	$(GO) run ./cmd/fleetbench -rath bin/rath $(FLEETBENCH_FLAGS)

# soak runs the long fault-injection chaos of the fleet (fleet/soak_test.go):
# hundreds of runs (RATH_SOAK_RUNS, default 200) per store through SIGKILLs,
# SIGSTOPs past the lease, duplicate jobs and a PostgreSQL restart. make test
# runs the bounded versions. It also makes the tenants' randomized requests
# 10,000 (make test: 1,000), in process and through rath serve, and the erasure's canary
# sweep 100 runs of one subject per store (make test: 10).
soak: deps build
	$(GO) test -tags '$(TAGS) soak' -run TestSoak -timeout 60m -v ./fleet
	$(GO) test -tags '$(TAGS) soak' -run 'TestTenants_RandomRequestsSeeOnlyTheirTenant' -timeout 30m -v ./internal/console
	RATH_TEST_BINARY=$(CURDIR)/bin/rath $(GO) test -tags '$(TAGS) soak' -run 'TestServe_TenantsRandomRequests|TestErase_CanarySweep|TestErase_ChaosWithWorkersAndAppenders' -timeout 30m -v ./cmd/rath/cli

# fuzz runs every fuzz target (each func Fuzz... in a _test.go file) for
# FUZZTIME: go test fuzzes one target at a time, named exactly.
FUZZTIME ?= 30s
fuzz:
	@set -e; grep -rHo --include='*_test.go' --exclude-dir=node_modules '^func Fuzz[A-Za-z0-9_]*' . | sort | \
	while IFS=: read -r file fn; do \
	  target=$${fn#func }; dir=$$(dirname "$$file"); \
	  echo "fuzz $$dir $$target for $(FUZZTIME)"; \
	  $(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) "$$dir"; \
	done

clean:
	rm -rf bin .tools
