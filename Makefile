# wasmlm — see README.md. Every target needs only Go, except where noted.
GO        ?= go
WASM_EXEC := $(shell $(GO) env GOROOT)/lib/wasm
# Packages whose tests also run as GOOS=js GOARCH=wasm under Node.
WASM_PKGS := ./engine/... ./tokenizer/... ./sampling/... ./chat/... ./internal/...
PROMPT    ?= Once upon a time

.PHONY: run test test-native test-wasm vet bench fuzz clean

## run: stream a story from the embedded default model
run:
	$(GO) run ./cmd/wasmlm generate -p "$(PROMPT)"

## test: everything CI runs: vet, native tests, the same tests in wasm under Node
test: vet test-native test-wasm

vet:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

test-native:
	$(GO) test ./...

# Needs Node.js (go_js_wasm_exec runs the test binary with it).
test-wasm:
	@command -v node >/dev/null || { echo "test-wasm needs Node.js (Debian package: nodejs)"; exit 1; }
	PATH="$$PATH:$(WASM_EXEC)" GOOS=js GOARCH=wasm $(GO) test $(WASM_PKGS)

## bench: engine benchmarks, natively and in wasm under Node
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./engine/
	PATH="$$PATH:$(WASM_EXEC)" GOOS=js GOARCH=wasm $(GO) test -run='^$$' -bench=. -benchmem ./engine/

## fuzz: run every fuzz target briefly (FUZZTIME=30s by default)
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf build web/dist
