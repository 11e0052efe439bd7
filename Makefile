# The two commands a newcomer needs: `make run` and `make test`.
GO      ?= go
PKG     := github.com/svcplatform/svc
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X $(PKG)/shared/buildinfo.Version=$(VERSION) -X $(PKG)/shared/buildinfo.Commit=$(COMMIT) -X $(PKG)/shared/buildinfo.BuildDate=$(DATE)
# The whole suite stays well under this on a 2-core machine.
TEST_TIMEOUT ?= 30m

.PHONY: build run test bench soak generate vet lint tidy-check fmt-check contract-docs-check console console-check

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/svc ./cmd/svc

## run: build and start the single-node platform (svc dev), data in ./.svc-dev
run: build
	./bin/svc dev

## test: install test dependencies, check formatting, tidiness, vet and lint, check that the committed
## console build matches its sources, run every test with -race
test: fmt-check tidy-check vet lint console-check
	scripts/install-deps.sh test
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

## bench: run the benchmarks and write docs/benchmarks.md
bench:
	scripts/install-deps.sh bench
	$(GO) run ./test/bench/storebench -out docs/benchmarks.md
	$(GO) run ./test/bench/authbench -out docs/benchmarks.md
	$(GO) run ./test/bench/channelbench -out docs/benchmarks.md
	$(GO) run ./test/bench/rtspbench -out docs/benchmarks.md
	$(GO) run ./test/bench/webhookbench -out docs/benchmarks.md
	$(GO) run ./test/bench/agentbench -out docs/benchmarks.md
	$(GO) run ./test/bench/leasebench -out docs/benchmarks.md
	$(GO) run ./test/bench/fanoutbench -out docs/benchmarks.md
	$(GO) run ./test/bench/latencybench -out docs/benchmarks.md
	$(GO) run ./test/bench/crashbench -out docs/benchmarks.md
	$(GO) run ./test/bench/consolebench -out docs/benchmarks.md
	$(GO) run ./test/bench/whepbench -out docs/benchmarks.md
	$(GO) run ./test/bench/glassbench -out docs/benchmarks.md
	$(GO) run ./test/bench/roombench -out docs/benchmarks.md
	$(GO) run ./test/bench/recordbench -out docs/benchmarks.md
	$(GO) run ./test/bench/recwritebench -out docs/benchmarks.md
	$(GO) run ./test/bench/recseekbench -out docs/benchmarks.md
	$(GO) run ./test/bench/gbbench -out docs/benchmarks.md

## contract-docs-check: compare api/openapi.yaml with the contract documents it was written
## from, which live outside this repository: make contract-docs-check CONTRACT_DOCS=/path/to/spec
## (the directory holding contract-a.md and operations.tsv)
contract-docs-check:
	@if [ -z "$(CONTRACT_DOCS)" ]; then echo "usage: make contract-docs-check CONTRACT_DOCS=/path/to/spec (the directory holding contract-a.md and operations.tsv)"; exit 2; fi
	CONTRACT_DOCS="$(abspath $(CONTRACT_DOCS))" $(GO) test -count=1 -tags contractdocs -run 'MatchContractA|MatchTheDocuments' -v ./api/contract/

## soak: the long variant of the store's fault suite (test/faults repeats each
## fault many times; the raft leader-kill and suffix-truncation tests run 5 times)
soak:
	scripts/install-deps.sh test
	SVC_SOAK=1 $(GO) test -race -count=1 -timeout 90m ./test/faults/
	$(GO) test -race -count=5 -timeout 60m -run 'TestLeaderKilledWhileClientsWrite|TestRestartAfterSuffixTruncation' ./controlplane/store/raftnode/

## generate: bundle api/openapi.yaml from its sources in api/openapi/ (one file per tag), then regenerate
## api/contract and the console's permission table from it
## (the console's TypeScript types come with make console)
generate:
	$(GO) generate ./api/... ./console/...

## console: rebuild the web console into console/dist (committed, embedded in svc) with Node.js
console:
	scripts/install-deps.sh console
	cd console && npm ci --no-audit --no-fund && npm run generate && npm run build

## console-check: rebuild the console in a scratch directory and fail when the committed
## console/dist or its generated types differ from what the sources give
console-check:
	scripts/install-deps.sh console
	cd console && npm ci --no-audit --no-fund
	cd console && npm run --silent check-types || { echo "console/src/api/schema.d.ts is stale: run make console and commit the result"; exit 1; }
	@cd console && out=$$(mktemp -d) && npx vue-tsc --noEmit -p tsconfig.json && npx vite build --outDir $$out --emptyOutDir --logLevel warn \
		&& if diff -r $$out dist; then rm -rf $$out; else rm -rf $$out; echo "console/dist differs from its sources: run make console and commit the result"; exit 1; fi

vet:
	$(GO) vet ./...

## lint: golangci-lint with .golangci.yml, the version pinned in tools/go.mod
## (a module of its own, so its dependencies stay out of ours)
LINT := bin/golangci-lint
$(LINT): tools/go.mod tools/go.sum
	$(GO) -C tools build -o $(CURDIR)/$(LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

lint: $(LINT)
	$(LINT) run ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

tidy-check:
	$(GO) mod tidy -diff
	$(GO) -C tools mod tidy -diff
