# Seller Platform API — the commands a newcomer needs are `make run` and
# `make test`; the rest serve ops and contributors.
SHELL := /bin/bash
ADDR ?= 127.0.0.1:8080
DATA ?= .data
STORE ?= sqlite
BIN := bin

.PHONY: run test bench vet fmt local clean

## run: build and start the whole API on http://$(ADDR)/v1 over the embedded store in $(DATA)
run: local
	$(BIN)/local serve --addr $(ADDR) --data $(DATA) --store $(STORE)

## test: install the emulators the tests need, start them, run every check and test
test:
	bash scripts/test

## bench: measure requests/s, p50, p99 and store round trips per operation
bench:
	bash scripts/bench

## local: build the local binary
local:
	go build -o $(BIN)/local ./functions/local

vet:
	go vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) dist
