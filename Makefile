# wasmlm — see README.md. Every target needs only Go, except where noted.
GO        ?= go
WASM_EXEC := $(shell $(GO) env GOROOT)/lib/wasm
# Packages whose tests also run as GOOS=js GOARCH=wasm under Node.
WASM_PKGS := ./engine/... ./tokenizer/... ./sampling/... ./grammar/... ./chat/... ./policy/... ./openai/... ./internal/... ./jsbridge/... ./httpapi/... ./cmd/worker/internal/...
PROMPT    ?= Once upon a time
# The static site `make web` writes, and the port `make run` serves it on.
WEB_DIST  ?= web/dist
# The files the site and the npm package ship, and where each comes from (internal/webfiles reads it too).
WEB_FILES := web/files.txt
# The SIMD128 kernels (go generate ./internal/simdgen), which the page and the edge worker load.
SIMD_KERNELS := internal/simdgen/kernels.wasm
# The same kernels, some written with relaxed SIMD, for engines that have it.
SIMD_RELAXED := internal/simdgen/kernels-relaxed.wasm
PORT      ?= 8080
# The npm package `make npm` writes (version: the VERSION file).
NPM_DIR   ?= build/npm
# The edge build `make worker` writes (wrangler.toml and tools/worker-run.mjs
# load it from here), and the port `make worker-run` serves it on: 8787 unless
# PORT is given on the command line or in the environment.
WORKER_DIR  := build/worker
# The worker's build tags; the tests build a second worker with wasmlm_testhooks added (a route that panics).
WORKER_TAGS := wasmlm_simd
WORKER_PORT := $(if $(filter command line environment,$(origin PORT)),$(PORT),8787)
# Packages a request runs once (chat templates, the JSON-schema converter, host policy, the OpenAI layer, the JSON
# decoder of requests; per token at most a chunk's framing), compiled without inlining in the page's and the edge's
# builds: Go's inlined code is large in WebAssembly, and without it these are 86 KB gzipped smaller in wasmlm.wasm.
# Never the engine, its kernels, the sampler, the grammar matcher or the tokenizers, which run per token.
REQUEST_NOINLINE := github.com/wasmlm/wasmlm/chat github.com/wasmlm/wasmlm/grammar/jsonschema github.com/wasmlm/wasmlm/policy \
	github.com/wasmlm/wasmlm/openai encoding/json
# The servers' builds (the edge worker, wasmlm-serve.wasm) add the HTTP handler, which per token only frames a chunk
# of text, and what they never run: the TLS stack's curves, big numbers, ASN.1 and MIME, which net/http links
# (together 140 KB gzipped off the worker, which `make worker` measures against its 3.5 MB budget).
SERVE_NOINLINE := $(REQUEST_NOINLINE) github.com/wasmlm/wasmlm/httpapi crypto/... math/big encoding/asn1 mime/...

.PHONY: bench-serve run generate deps test test-native test-race test-arm64 test-wasm test-wasm-simd test-simd-chromium test-e2e-browser test-e2e-worker test-e2e-npm test-gpu test-long npm wasm web worker worker-run vet bench bench-e2e fuzz clean

## run: build the demo site (web/dist) and serve it on http://127.0.0.1:$(PORT) (PORT= overrides; ISOLATE=1 serves it
## cross-origin isolated, so a model split across workers exchanges through shared memory)
run: web
	@echo "wasmlm demo: http://127.0.0.1:$(PORT)/"
	$(GO) run ./cmd/wasmlm serve -web $(WEB_DIST) -addr 127.0.0.1:$(PORT)$(if $(ISOLATE), -isolate)

## generate: stream a story from the embedded default model (PROMPT=... overrides the prompt)
generate:
	$(GO) run ./cmd/wasmlm generate -p "$(PROMPT)"

## wasm: the browser builds of the engine, with the SIMD128 kernels' imports (-tags wasmlm_simd: its host must provide them,
## as web/simd.js does, stubs included): $(WEB_DIST)/wasmlm.wasm, and $(WEB_DIST)/wasmlm-serve.wasm, which also has the
## OpenAI endpoint of lm.serve (-tags wasmlm_serve: httpapi and net/http, +2.8 MB) and which a load with { serve: true } runs;
## and Go's glue for them, $(WEB_DIST)/wasm_exec.js
wasm:
	@mkdir -p $(WEB_DIST)
	GOOS=js GOARCH=wasm $(GO) build -tags wasmlm_simd -trimpath $(foreach p,$(REQUEST_NOINLINE),-gcflags=$(p)=-l) -ldflags="-s -w" -o $(WEB_DIST)/wasmlm.wasm ./cmd/wasm
	GOOS=js GOARCH=wasm $(GO) build -tags wasmlm_simd,wasmlm_serve -trimpath $(foreach p,$(SERVE_NOINLINE),-gcflags=$(p)=-l) -ldflags="-s -w" -o $(WEB_DIST)/wasmlm-serve.wasm ./cmd/wasm
	install -m 644 $(WASM_EXEC)/wasm_exec.js $(WEB_DIST)/

## web: the self-contained static site in $(WEB_DIST): the demo page (web/demo) beside the library (web/), the engine's
## builds, SIMD kernels and default model: the lines of web/files.txt that ship in the site
web: wasm $(WEB_FILES)
	@awk '$$1 ~ /^(site|site,npm)$$/ && $$3 != "built" { print $$3, $$2 }' $(WEB_FILES) | while read -r src name; do \
	  mkdir -p "$$(dirname "$(WEB_DIST)/$$name")" && install -m 644 "$$src" "$(WEB_DIST)/$$name" || exit 1; \
	done

## npm: the npm package wasmlm in $(NPM_DIR) (version: VERSION); npm publish $(NPM_DIR) publishes it, make npm does not
npm: web
	$(GO) run ./tools/npmpack -web $(WEB_DIST) -o $(NPM_DIR)
	@command -v npm >/dev/null || { echo "$(NPM_DIR): written (npm, which is not installed, would say its packed size)"; exit 0; }; \
	cd $(NPM_DIR) && npm pack --dry-run --json 2>/dev/null | node -e 'const [p] = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(`$(NPM_DIR): $${p.name}@$${p.version}, $${p.entryCount} files, $${p.size} bytes packed, $${p.unpackedSize} unpacked`)'

## test: everything CI runs: vet, native tests, the race detector over the packages that run goroutines, the arm64 kernels'
## tests (under QEMU on x86-64), the same tests in wasm under Node, the WebGPU tests in Chromium, browser e2e, edge e2e,
## the npm package's e2e
test: deps vet test-native test-race test-arm64 test-wasm test-wasm-simd test-simd-chromium test-gpu test-e2e-browser test-e2e-worker test-e2e-npm

## deps: install what the tests need beyond Go when missing (Node.js, npm ci, Chromium, QEMU on x86-64)
deps:
	tools/ensure-deps.sh

# staticcheck at an exact version: go run fetches it through the module proxy (it is not in go.mod). It checks
# every build the code has at once (-matrix): native, arm64 (the NEON kernels), GOOS=js GOARCH=wasm, and wasm with
# the SIMD kernels and the page's HTTP server; code used in one build only is not "unused".
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
STATICCHECK_BUILDS := native:\narm64: GOARCH=arm64\njs: GOOS=js GOARCH=wasm\njstags: GOOS=js GOARCH=wasm -tags wasmlm_simd,wasmlm_serve\n

## vet: go vet, natively and for GOOS=js GOARCH=wasm (the bridge also with -tags wasmlm_serve), staticcheck, and gofmt
vet:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet -tags wasmlm_serve ./jsbridge/ ./cmd/wasm/
	printf '$(STATICCHECK_BUILDS)' | $(STATICCHECK) -matrix ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# The e2e suites (tests/e2e) need their builds and tools: they run from their own targets.
## test-native: the native tests of every package but the e2e suites
test-native:
	$(GO) test $$($(GO) list ./... | grep -v '/tests/e2e$$')

## test-race: the packages that run goroutines under the race detector (go test -race; see docs/testing.md): httpapi but its
## JSON-schema corpus and its 220-character ambiguous grammar, engine/shard, cmd/wasmlm but the benchmark models' generator (its
## stories15M and parity shapes) and llama.cpp's run of a split model, and
## of engine the tests whose sessions run at once, are cancelled from another goroutine or split their products among threads
## (its whole suite takes some 8 minutes under the detector; its other tests run the same code from one goroutine)
RACE_SKIP   := TestJSONSchemaCorpus|TestAmbiguousGrammarEndsWithAMatch|TestBenchGen$$|TestBenchGenParity$$|TestSplitModelInLlamaCpp
RACE_ENGINE := TestSessionsRunConcurrently|TestCancelFromAnotherGoroutine|TestCancelStopsAndSessionStaysUsable|TestCallbackErrorAborts|TestConcurrentGenerateIsRejected|TestThreads|TestEmbedSameBitsAnyWay|TestNonFiniteEmbeddingStopsGeneration
test-race:
	$(GO) test -race -skip '$(RACE_SKIP)' ./httpapi/ ./engine/shard/ ./cmd/wasmlm/
	$(GO) test -race -run '$(RACE_ENGINE)' ./engine/

## test-arm64: the tensor tests, and the engine's golden, prompt-block and thread tests, built for GOARCH=arm64: the NEON
## kernels against the pure-Go ones, bit for bit; on an arm64 machine natively, elsewhere under QEMU (Debian package
## qemu-user-static). Not the embeddings' llama.cpp goldens, held within a tolerance, which prove nothing of the kernels'
## bits that the others do not (some 35 s of CPU under QEMU)
ARM64_EXEC ?= $(if $(filter aarch64 arm64,$(shell uname -m)),,qemu-aarch64-static)
test-arm64:
	@test -z "$(ARM64_EXEC)" || command -v $(ARM64_EXEC) >/dev/null || { echo "test-arm64 needs QEMU's $(ARM64_EXEC) (Debian package: qemu-user-static)"; exit 1; }
	GOARCH=arm64 $(GO) test $(if $(ARM64_EXEC),-exec $(ARM64_EXEC)) ./engine/tensor/
	GOARCH=arm64 $(GO) test $(if $(ARM64_EXEC),-exec $(ARM64_EXEC)) -run 'Greedy|Logits|Golden|Quantized|PromptBlocks|Threads' -skip 'TestEmbeddingsMatchLlamaCppGolden' ./engine/

## test-wasm: the engine, tokenizer, sampling, chat, policy, openai, internal, bridge, HTTP and edge-limit tests in wasm under Node
## (go_js_wasm_exec runs the test binaries with Node.js); the bridge's twice: without the OpenAI endpoint (serveHTTP
## refuses) and, for the tests of serveHTTP (the rest are the same code), with it (-tags wasmlm_serve, the build of wasmlm-serve.wasm)
test-wasm:
	@command -v node >/dev/null || { echo "test-wasm needs Node.js (Debian package: nodejs)"; exit 1; }
	PATH="$$PATH:$(WASM_EXEC)" GOOS=js GOARCH=wasm $(GO) test $(WASM_PKGS)
	PATH="$$PATH:$(WASM_EXEC)" GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_serve -run 'ServeHTTP' ./jsbridge/

## test-wasm-simd: the tensor and engine tests in wasm under Node with the SIMD128 kernels
## (tools/wasm_exec_simd.sh provides them through web/simd.js), with the relaxed-SIMD ones, then with its stubs (the fallback).
## Each kernel set is bit-checked whole (the tensor tests); of the engine's tests, the relaxed kernels skip those that run no
## product (WASM_SIMD_SAME: the memory estimate, whose buffers are the SIMD build's, and loading every architecture), and the
## stubs, which run the pure-Go kernels that make test-wasm runs the whole engine suite on, run the golden tokens and logits
SIMD_EXEC      = -exec "$(abspath tools/wasm_exec_simd.sh)"
WASM_SIMD_SAME := TestMemoryEstimateCovers|TestParityModelsCoverEveryArchitecture
test-wasm-simd:
	@command -v node >/dev/null || { echo "test-wasm-simd needs Node.js (Debian package: nodejs)"; exit 1; }
	GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd $(SIMD_EXEC) ./engine/tensor/ ./engine/
	@if tools/wasm_exec_simd.sh --probe-relaxed; then \
	  echo "WASMLM_SIMD=relaxed GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd ... -skip '$(WASM_SIMD_SAME)' ./engine/tensor/ ./engine/"; \
	  WASMLM_SIMD=relaxed GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd $(SIMD_EXEC) -skip '$(WASM_SIMD_SAME)' ./engine/tensor/ ./engine/; \
	else \
	  echo "test-wasm-simd: this Node ($$(node --version)) has no relaxed SIMD (Node 20 has it with --experimental-wasm-relaxed-simd, 22 and later by default): the relaxed kernels are tested in Chromium only"; \
	fi
	WASMLM_SIMD=off GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd $(SIMD_EXEC) ./engine/tensor/
	WASMLM_SIMD=off GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd $(SIMD_EXEC) -run 'Greedy|Golden|Logits' ./engine/

# The go test -exec runner of test-gpu (tools/wasmbrowser), which test-gpu builds.
WASMBROWSER := build/wasmbrowser
# need_chromium is the shell that starts target $(1)'s recipe line where tools/wasmbrowser needs Chromium: without it the
# target ends, skipped with a message, and under CI failed.
need_chromium = if ! $(WASMBROWSER) -check >/dev/null; then \
	  if [ -n "$$CI" ]; then echo "$(1) needs Chromium (Debian package chromium)"; exit 1; fi; \
	  echo "$(1): skipped: no Chromium (Debian package chromium; under CI this fails)"; exit 0; \
	fi

# Packages whose tests run in Chromium with WebGPU.
GPU_PKGS := ./engine/gpu/... ./webgpu/...

## test-gpu: the WebGPU tests (engine/gpu's kernels, the webgpu host) as GOOS=js GOARCH=wasm binaries in a Web Worker of
## headless Chromium with SwiftShader's WebGPU adapter, run by tools/wasmbrowser (go test -exec); without Chromium skipped
## with a message, and failed under CI
test-gpu:
	$(GO) build -o $(WASMBROWSER) ./tools/wasmbrowser
	@$(call need_chromium,test-gpu); \
	echo 'GOOS=js GOARCH=wasm $(GO) test -exec="$(abspath $(WASMBROWSER))" $(GPU_PKGS)'; \
	GOOS=js GOARCH=wasm $(GO) test -timeout 30m -exec="$(abspath $(WASMBROWSER))" $(GPU_PKGS)

## test-simd-chromium: the tensor tests with the relaxed-SIMD kernels in a Web Worker of headless Chromium (tools/wasmbrowser
## with WASMLM_SIMD=relaxed, through web/simd.js as a page loads them), the engine that runs them for visitors: relaxed SIMD
## leaves some results to the engine, so each kernel is bit-checked where it runs; without Chromium skipped, failed under CI
test-simd-chromium:
	$(GO) build -o $(WASMBROWSER) ./tools/wasmbrowser
	@$(call need_chromium,test-simd-chromium); \
	echo 'WASMLM_SIMD=relaxed GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd -exec="$(abspath $(WASMBROWSER))" -run ^Test ./engine/tensor/'; \
	WASMLM_SIMD=relaxed GOOS=js GOARCH=wasm $(GO) test -tags wasmlm_simd -exec="$(abspath $(WASMBROWSER))" -run '^Test' ./engine/tensor/

## test-long: the exhaustive checks too slow for make test, which runs a representative part of each (WASMLM_LONG=1 makes
## them whole; see docs/testing.md): the tokenizers against llama.cpp on every string (engine/vocab: the 3000 random strings
## of the reference and the 2000 of WordPiece's, where make test takes every tenth and fifth), structured output sampled
## with every seed (internal/grammarref: six of stories260K and two of each other model, where make test takes two and one), and the GPU's whole forward
## pass held to the CPU with every case whole (every storage type on two layers, six greedy prompt/file pairs each; about
## 15 minutes on SwiftShader), and every parity model served by the edge worker from miniflare's local R2 (tests/e2e
## TestWorkerEveryFamily, where make test serves one quantized model per kind of machinery; needs npm ci)
test-long: worker
	WASMLM_LONG=1 $(GO) test -count=1 ./engine/vocab/ ./internal/grammarref/
	WASMLM_LONG=1 $(MAKE) test-gpu
	WASMLM_LONG=1 WASMLM_WORKER_BUILD="$(abspath $(WORKER_DIR))" $(GO) test -count=1 -run '^TestWorkerEveryFamily$$' ./tests/e2e/

## test-e2e-browser: the headless-Chromium tests (Debian package chromium) against $(WEB_DIST)
test-e2e-browser: web
	WASMLM_WEB_DIST="$(abspath $(WEB_DIST))" $(GO) test -count=1 -run '^TestBrowser' ./tests/e2e/

## test-e2e-npm: the npm package packed and installed as an app would: its contents, Node.js, Deno and Bun, apps built with Vite
## and webpack, and a page importing it from another origin (a CDN), in headless Chromium; npx wasmlm serve beside the Go CLI's
## serve, driven by the openai client (needs npm ci; installs Deno's and Bun's binaries itself, tests/runtimes/package-lock.json:
## some 195 MB that the repository's npm ci leaves out)
test-e2e-npm: npm
	tools/npm-ci.sh tests/runtimes
	WASMLM_NPM_BUILD="$(abspath $(NPM_DIR))" $(GO) test -count=1 -run '^TestNPM' ./tests/e2e/

## worker: the edge worker (cmd/worker: one Go instance per isolate, loaded once, serving every request) in $(WORKER_DIR)/,
## for miniflare (make worker-run) or npx wrangler deploy: syumai/workers' glue (runtime.mjs, wasm_exec.js) with our entry
## cmd/worker/worker.mjs in place of its worker.mjs,
## web/simd.js, the kernels as simd.wasm, and app.wasm built with -tags wasmlm_simd (and the packages of SERVE_NOINLINE, which run once per request or never, without inlining).
## It builds into a directory of its own beside $(WORKER_DIR) and then renames each file that changed into $(WORKER_DIR)
## (a file the same as the one there is left alone), so two make worker at once, or a miniflare starting meanwhile, never
## read a file half-written
worker:
	set -e; mkdir -p "$(WORKER_DIR)"; new=$$(mktemp -d "$(WORKER_DIR).new.XXXXXX"); trap 'rm -rf "$$new"' EXIT; \
	$(GO) run github.com/syumai/workers/cmd/workers-assets-gen -mode=go -o "$$new"; \
	install -m 644 cmd/worker/worker.mjs web/simd.js "$$new"/; \
	install -m 644 $(SIMD_KERNELS) "$$new"/simd.wasm; \
	install -m 644 $(SIMD_RELAXED) "$$new"/simd-relaxed.wasm; \
	GOOS=js GOARCH=wasm $(GO) build -tags $(WORKER_TAGS) -trimpath $(foreach p,$(SERVE_NOINLINE),-gcflags=$(p)=-l) -ldflags="-s -w" -o "$$new"/app.wasm ./cmd/worker; \
	for f in "$$new"/*; do cmp -s "$$f" "$(WORKER_DIR)/$${f##*/}" || mv -f "$$f" "$(WORKER_DIR)/"; done
	@echo "$(WORKER_DIR): app.wasm $$(gzip -c $(WORKER_DIR)/app.wasm | wc -c) bytes gzipped, the whole worker $$(cat $(WORKER_DIR)/*.mjs $(WORKER_DIR)/*.js $(WORKER_DIR)/*.wasm | gzip -c | wc -c) (budget 3.5 MB; Cloudflare Workers: 10 MB paid, 3 MB free as it stood)"

## worker-run: serve the edge build in miniflare (Cloudflare's simulator: workerd with a local R2 bucket, kept in
## build/worker-r2-PORT, one per port, so that runs on two ports at once keep their buckets apart) on http://127.0.0.1:8787
## (PORT= overrides) with tools/worker-run.mjs; MODEL=path/to/model.gguf puts that file (a split set's first part: every part) in the bucket MODEL_BUCKET before the
## worker listens and sets WASMLM_MODEL to it (without MODEL: the embedded default); the WASMLM_* variables of the environment
## become the worker's (WASMLM_API_KEYS=sk-local make worker-run). Needs npm ci
worker-run: worker
	@test -d node_modules/miniflare || { echo "worker-run needs miniflare: run npm ci"; exit 1; }
	node tools/worker-run.mjs --build $(WORKER_DIR) --port $(WORKER_PORT) --r2 build/worker-r2-$(WORKER_PORT) $(if $(MODEL),--model "$(MODEL)")

## test-e2e-worker: the edge-worker tests (workerd, miniflare with local R2, the openai npm client; needs npm ci) against $(WORKER_DIR)
test-e2e-worker: worker
	WASMLM_WORKER_BUILD="$(abspath $(WORKER_DIR))" $(GO) test -count=1 -run '^Test(Worker|HTTP)' ./tests/e2e/

## bench: speed on every host (native, wasm in Node with and without SIMD, headless Chromium) and, side by side on the same files,
## llama.cpp natively (node-llama-cpp, 1 and 2 threads: needs npm ci --omit=optional) and wllama in the same Chromium (installed by
## make bench itself, bench/package-lock.json), for the default
## model and random-weight stories15M/stories110M models in F32, Q8_0, Q4_0, Q4_K and TinyLlama-1.1B ones in Q8_0, Q4_0, Q4_K, with a
## 128-token prompt and a 512-token one: the tables, bench/results.json (see bench/README.md; results are judged against
## bench/targets.json). BENCH=quick: the default model and stories15M only, into bench/results-quick.json. BENCH=peers: the browser's
## prompt and decode speed against llama.cpp's (TinyLlama and Qwen3-0.6B, Q8_0/Q4_0/Q4_K, on native, chromium-simd with one worker,
## chromium-auto with workers: 'auto' and the peers),
## into bench/results-peers.json. BENCH=memory: the peak resident memory of the process that ran the model (in Chromium the tab's
## renderer, which runs its workers) for TinyLlama and a 3B shape in Q4_0 on native, chromium-simd (default load options: the model
## cache on) and wllama, into bench/results-memory.json (20-30 minutes). BENCH=archs: the shapes of other families (Qwen3-0.6B,
## Gemma-3-1B) in Q8_0 and Q4_K on native, chromium-simd and the peers, into bench/results-archs.json; BENCH=hybrid: the same for the
## hybrids' shapes (LFM2-1.2B, Qwen3.5-0.8B), into bench/results-hybrid.json. BENCH=native: native speed
## against llama.cpp, stories15M, stories110M (F32 too) and TinyLlama in Q8_0/Q4_0/Q4_K natively with 1 and 2 threads (-threads)
## beside llama.cpp with 1 and 2, into bench/results-native.json. BENCH=grammar: the cost of constrained sampling, stories15M,
## TinyLlama and a 151936-token vocabulary in Q4_0 sampled without and with bench/grammar-schema.json on native and chromium-simd,
## and the token masks alone on Llama 2's and Qwen3's vocabularies (natively, under Node, in Chromium), into
## bench/results-grammar.json. BENCH=embed: embeddings/s, MiniLM-L6 and BGE-base shapes in F16 and Q8_0 (MiniLM in F32 too), texts
## of 32 and 256 tokens one and sixteen to a call, on native (1 and 2 threads), chromium-simd (the page's lm.embeddings.create, one
## worker) and llama.cpp (1 and 2 threads), into bench/results-embed.json. BENCH=webgpu: the GPU path, Qwen3-0.6B and TinyLlama
## shapes in Q8_0 and Q4_0 in a Chromium started with WebGPU, the page with device 'webgpu' beside device 'cpu', the adapter, dispatches
## and bytes of weights per token and kernel times (tools/gpuprofile), into bench/results-webgpu.json; on a fallback adapter
## (SwiftShader) an 8-token prompt and 2 tokens, numbers that say nothing of a GPU. The tables are docs/benchmarks.md's.
## Models are generated into bench/models/.
BENCH ?= full
bench: web
	tools/npm-ci.sh bench
	$(GO) run ./tools/benchrun -mode $(BENCH) -web $(WEB_DIST)

## bench-serve: wasmlm serve under load: TinyLlama-1.1B Q4_0 served with 4 slots, 1, 4 and 16 concurrent streaming
## clients of 64 tokens each; aggregate and per-stream tokens/s into bench/results-serve.json (make bench BENCH=native first,
## for the model).
bench-serve:
	$(GO) run ./tools/servebench -m bench/models/tinyllama-Q4_0.gguf

## bench-e2e: what make bench does not measure, as Go benchmarks in tests/e2e run once each: the demo page's load time and the
## default model's sampled and traced speed in Chromium, Web Workers' exchanges, the edge worker in workerd (start, per-request
## overhead, streaming); see web/README.md and httpapi/README.md. WASMLM_BENCH_WORKERS=full adds the big models to the workers' one.
bench-e2e: web worker
	WASMLM_WEB_DIST="$(abspath $(WEB_DIST))" WASMLM_WORKER_BUILD="$(abspath $(WORKER_DIR))" $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./tests/e2e/

## fuzz: run every fuzz target briefly (FUZZTIME=30s by default)
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## clean: remove the builds (build/, web/dist/)
clean:
	rm -rf build web/dist

## help: this list (each target's "## target: ..." comments in the Makefile)
.PHONY: help
help:
	@echo "make targets (see README.md and docs/):"
	@PORT='$(PORT)' WEB_DIST='$(WEB_DIST)' WORKER_DIR='$(WORKER_DIR)' NPM_DIR='$(NPM_DIR)' awk ' \
	  function expand(s,   name) { \
	    while (match(s, /\$$\([A-Z_]+\)/)) { \
	      name = substr(s, RSTART + 2, RLENGTH - 3); \
	      s = substr(s, 1, RSTART - 1) ENVIRON[name] substr(s, RSTART + RLENGTH); \
	    } \
	    return s; \
	  } \
	  /^## [A-Za-z0-9_-]+:/ { target = $$2; sub(/:$$/, "", target); sub(/^## [^:]+: */, ""); \
	    printf "  %-17s %s\n", target, expand($$0); next } \
	  /^## / { sub(/^## */, ""); printf "  %-17s %s\n", "", expand($$0) }' $(MAKEFILE_LIST)
