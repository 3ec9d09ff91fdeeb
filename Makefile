# Seller Platform API — the commands a newcomer needs are `make run` and
# `make test`; the rest serve ops and contributors. Between two changes,
# `make test-quick` runs every check and test that needs no emulator.
SHELL := /bin/bash
ADDR ?= 127.0.0.1:8080
DATA ?= .data
STORE ?= sqlite
RUN_FLAGS ?=
BIN := bin
# Ops: the stage that build/synth/deploy act on, extra CDK CLI arguments,
# and make invoke's function and event.
STAGE ?= dev
CDK_ARGS ?=
FN ?=
EVENT ?=
INVOKE_DATA ?=
CDK := cd infra && JSII_SILENCE_WARNING_DEPRECATED_NODE_RELEASE=1 CDK_DISABLE_CLI_TELEMETRY=true npx --no-install cdk

CLOUD_DATA ?= .cloud

.PHONY: run test test-quick fuzz bench loadtest vet fmt generate local clean build synth deploy cdk-cli invoke infra-test tidy cloud localstack restore-drill

## run: build and start the whole API on http://$(ADDR)/v1 over the embedded store in $(DATA) (STORE=dynamodb: on DynamoDB Local and the SQS emulator, started here; RUN_FLAGS: more serve flags)
run: local
ifeq ($(STORE),dynamodb)
	ADDR=$(ADDR) DATA=$(DATA) BIN=$(BIN) bash scripts/run-dynamodb
else
	$(BIN)/local serve --addr $(ADDR) --data $(DATA) --store $(STORE) $(RUN_FLAGS)
endif

## cloud: the deployed shape on this machine: every function built for the host, the stack synthesized, and its API, stream, queues and schedule run from the template on the emulators (scripts/cloud) on http://$(ADDR)/v1
cloud:
	bash scripts/cloud-synth
	go build -o $(BIN)/cloud ./scripts/cloud
	$(BIN)/cloud serve --addr $(ADDR) --data $(CLOUD_DATA)

## localstack: deploy the stack (stage localstack) onto a running LocalStack with the pinned CDK CLI (scripts/localstack up first; needs Docker)
localstack: cdk-cli
	bash scripts/localstack deploy

## test: install the emulators the tests need, start them, run every check and test (each stage's time at the end; SELLERAPI_TEST_CLOCK_SHIFT_YEARS=N repeats a run's clock shift, SELLERAPI_TEST_STORES=all puts every HTTP scenario on DynamoDB Local too)
test:
	bash scripts/test

## test-quick: every check and test that needs no emulator (tracked files, gofmt, vet, go test -short with the emulators unset): the loop between two changes
test-quick:
	bash scripts/test-quick

## fuzz: run every Go fuzz target for FUZZTIME each (default 1m; FUZZJOBS at a time, default 1)
fuzz:
	bash scripts/fuzz

## bench: measure requests/s, p50, p99 and store round trips per operation
bench:
	bash scripts/bench

## loadtest: hundreds of vendors within their allowances beside hostile ones (tarpit receivers, forged bearers, crafted images) on loopback; prints what the well-behaved saw (LOADTEST_CLI=bin/cloud: the deployed shape, after make cloud; LOADTEST_FLAGS: e.g. -vendors 50 -duration 2m -check)
LOADTEST_CLI ?= $(BIN)/local
LOADTEST_FLAGS ?=
loadtest: local
	go run ./scripts/loadtest -cli $(LOADTEST_CLI) $(LOADTEST_FLAGS)

## local: build the local binary
local:
	go build -o $(BIN)/local ./functions/local

## build: one reproducible linux/arm64 bootstrap zip per function in dist/, and their sizes
build:
	bash scripts/build

## synth: build, then synthesize the stack of STAGE into infra/cdk.out (CDK_ARGS="-c domain=... -c certificateArn=...")
synth: build cdk-cli
	$(CDK) synth --no-notices -c stage=$(STAGE) $(CDK_ARGS)

## deploy: build, then deploy the stacks of STAGE with the AWS credentials of the environment (prod: also its edge's web ACL stack in us-east-1; cdk bootstrap both regions first)
deploy: build cdk-cli
	$(CDK) deploy --all --no-notices -c stage=$(STAGE) $(CDK_ARGS)

## cdk-cli: install the CDK CLI pinned in infra/package-lock.json
cdk-cli:
	@test -x infra/node_modules/.bin/cdk || npm ci --prefix infra --no-audit --no-fund

## invoke: run EVENT through function FN's binary locally, e.g. make invoke FN=admin EVENT=events/admin/vendor-create.json [VENDOR_ID=...]
invoke:
	@test -n "$(FN)" && test -n "$(EVENT)" || { echo "usage: make invoke FN=<function> EVENT=<events/...json> [KEY=value for each {{KEY}}] [INVOKE_DATA=dir]" >&2; exit 2; }
	go build -tags lambda.norpc,embedded -o $(BIN)/lambda/$(FN) ./functions/$(FN)
	go run ./scripts/lambdarun $(if $(INVOKE_DATA),-data $(INVOKE_DATA)) $(BIN)/lambda/$(FN) $(EVENT)

## restore-drill: restore the table (SELLERAPI_TABLE) as of AT (RFC 3339; default the latest restorable time) under a new name, re-apply its stream, TTL and settings, read it through the admin function's store.check, and print the minutes taken (docs/operations.md, "Restoring the table"; DRILL_FLAGS: e.g. -target NAME -vendor ID)
AT ?=
DRILL_FLAGS ?=
restore-drill:
	go run ./scripts/restore-drill $(if $(AT),-at $(AT)) $(DRILL_FLAGS)

## infra-test: the stack's tests (a synth with placeholder code), and dist/ when it is built
infra-test:
	cd infra && go vet . ./stack/... && SELLERAPI_DIST=$(if $(wildcard dist/*.zip),$(CURDIR)/dist) go test -count=1 . ./stack/...

## generate: regenerate what is generated from shared/openapi/openapi.json: the Go client (shared/client/types.gen.go and operations.gen.go) and the parameter table (shared/openapi/params.gen.go)
generate:
	go generate ./shared/client ./shared/openapi

vet:
	go vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) dist infra/cdk.out $(CLOUD_DATA)

## tidy: go mod tidy; -e because the module proxy refuses a pprof version
## that only modernc.org/sqlite's own tests import
tidy:
	go mod tidy -e
