//go:build !js

package wasmlm_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/wasmlm/wasmlm" // the module path

// layering says, for each package (or package tree, with a trailing "/..."),
// which wasmlm packages it may import directly. Imports point down the list
// in ARCHITECTURE.md, never up; a package missing here fails the test so the
// table stays complete.
var layering = map[string][]string{
	"cmd/...": {"..."},
	// The page's own OpenAI endpoint (serveHTTP) is httpapi's handler over
	// the bridge's session, only in builds tagged wasmlm_serve
	// (TestPageBuildHasNoHTTP).
	"jsbridge": {"openai", "policy", "engine/...", "tokenizer/...", "sampling", "chat", "models", "httpapi", "webgpu", "jsbridge/jshttp"},
	// HTTP between JavaScript and an http.Handler: the page's serveHTTP
	// and the edge worker share it.
	"jsbridge/jshttp": {},
	// engine/gpu's Host over the browser's navigator.gpu (syscall/js).
	"webgpu":  {"engine/gpu"},
	"httpapi": {"openai", "policy", "engine/...", "tokenizer/...", "sampling", "chat", "models"},
	// OpenAI's requests as engine calls, the engine's output as OpenAI's
	// replies, for every host; no transport.
	"openai": {"policy", "engine/...", "tokenizer/...", "sampling", "chat"},
	// Host policy over the engine: chat prompts, grammars as constraints,
	// error codes.
	"policy": {"engine/...", "tokenizer/...", "sampling", "chat", "grammar/..."},
	// The engine knows no chat template and no grammar: a grammar reaches
	// it as an engine.Constraint.
	"engine":       {"engine/gguf", "engine/tensor", "engine/vocab", "tokenizer/...", "sampling", "internal/fmath"},
	"engine/vocab": {"engine/gguf", "tokenizer/..."},
	// Splitting a model across workers plugs into the engine from above
	// (engine.Peers); the engine knows nothing of it.
	"engine/shard": {"engine", "engine/gguf", "engine/tensor"},
	// The forward pass on a WebGPU device plugs into the engine from above
	// (engine.Device), as a split does; the WebGPU calls themselves are
	// the browser host's (webgpu).
	"engine/gpu":    {"engine", "engine/tensor", "internal/fmath"},
	"engine/gguf":   {"engine/tensor"},
	"engine/tensor": {"internal/fmath"},
	// Build tools, which no package of the product imports: the SIMD128
	// kernel module's emitter (go generate; the hosts load the module it
	// writes) and the launcher of headless Chromium (tests, benchmark).
	"internal/simdgen":  {"internal/wasmgen", "internal/fmath"}, // the SIMD128 kernels (go generate); fmath: the exponential's constants
	"internal/asmgen":   {"internal/fmath"},                     // engine/tensor's amd64 assembly, written with avo (go generate)
	"internal/headless": {},
	"chat":              {"grammar/jsonschema"},
	// JSON Schema to GBNF: no wasmlm imports, usable by every host.
	"grammar/jsonschema":  {},
	"tokenizer":           {},
	"tokenizer/bpe":       {"tokenizer"},
	"tokenizer/wordpiece": {"tokenizer"},
	"sampling":            {"internal/fmath"},
	"grammar":             {}, // GBNF grammars and the token masks of constrained sampling
	"models":              {},
	"internal/fmath":      {},
	"internal/race":       {}, // whether the race detector is built in: allocation tests skip under it
	"internal/longtest":   {}, // whether make test-long runs the exhaustive sets
	"internal/golden":     {}, // llama2.c's reference outputs, for the tests of several packages
	"internal/wasmgen":    {},
	"internal/webfiles":   {},                               // web/files.txt: what the site and the npm package ship
	"internal/modelgen":   {"engine/gguf", "engine/tensor"}, // random-weight models for tests and benchmarks
	"internal/testmodel":  {"internal/modelgen"},            // the models several packages' tests share (stories260K embedded)
	// The llama.cpp parity harness (tests of every architecture): runs
	// Node.js, so a build tool like internal/headless.
	"internal/llamacppref": {"internal/modelgen", "engine/tensor"},
	// llama.cpp's and ajv's verdicts on texts (grammar/jsonschema's
	// tests): runs Node.js too.
	"internal/grammarref": {},
	// llama.cpp's embeddings and rerank scores (embedding models' tests):
	// runs Node.js too.
	// Its golden file's models are modelgen's and the default one.
	"internal/embedref": {"internal/llamacppref", "internal/modelgen", "engine/gguf", "engine/tensor", "models"},
	"tests/e2e":         {"..."},
	"tools/...":         {"..."},
}

// hostFree are the package trees that must run unchanged natively, in a
// browser and in an edge worker: no JavaScript, no HTTP, no files, no
// logging; hostTools are the packages under them that only build and test
// machinery runs, on the developer's machine.
var (
	hostFree  = []string{"openai", "policy", "engine/...", "tokenizer/...", "sampling", "chat", "grammar/...", "internal/..."}
	hostTools = []string{"internal/headless", "internal/longtest", "internal/llamacppref", "internal/grammarref", "internal/embedref", "internal/asmgen"}
)

// forbiddenDirect may not be imported by hostFree packages; forbiddenDeps may
// not be reached even indirectly in a native build (os is reached through
// fmt, so only direct imports of it are checked; under GOOS=js the standard
// library itself reaches syscall/js, so there only direct imports count).
var (
	forbiddenDirect = []string{"os", "log", "net/http", "syscall/js"}
	forbiddenDeps   = []string{"syscall/js", "net/http", "log"}
)

func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == tree || strings.HasPrefix(pkg, tree+"/")
	}
	return pkg == pattern
}

func rule(pkg string) (allowed []string, ok bool) {
	best := ""
	for pattern, a := range layering {
		if matches(pattern, pkg) && len(pattern) > len(best) {
			best, allowed, ok = pattern, a, true
		}
	}
	return allowed, ok
}

func TestDependencyDirection(t *testing.T) {
	for _, goos := range []string{"", "js"} {
		cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
		if goos == "js" {
			cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			parts := strings.Split(line, "|")
			require.Len(t, parts, 3, line)
			pkg := strings.TrimPrefix(strings.TrimPrefix(parts[0], module), "/")
			if pkg == "" {
				continue // the root package is documentation only
			}
			allowed, ok := rule(pkg)
			require.True(t, ok, "package %s has no entry in the layering table", pkg)
			for _, imp := range strings.Fields(parts[1]) {
				rel, internal := strings.CutPrefix(imp, module+"/")
				if !internal {
					continue
				}
				permitted := false
				for _, a := range allowed {
					permitted = permitted || matches(a, rel)
				}
				require.True(t, permitted, "%s imports %s, which it must not (GOOS=%s)", pkg, rel, goos)
			}
			for _, tree := range hostFree {
				if !matches(tree, pkg) || slices.Contains(hostTools, pkg) {
					continue
				}
				for _, imp := range strings.Fields(parts[1]) {
					for _, bad := range forbiddenDirect {
						require.NotEqual(t, bad, imp, "%s imports %s: engine code stays host-free (GOOS=%s)", pkg, bad, goos)
					}
				}
				if goos == "js" {
					continue
				}
				for _, dep := range strings.Fields(parts[2]) {
					for _, bad := range forbiddenDeps {
						require.NotEqual(t, bad, dep, "%s depends on %s: engine code stays host-free (GOOS=%s)", pkg, bad, goos)
					}
				}
			}
		}
	}
}

// TestPageBuildHasNoHTTP: the page's default engine (make wasm's
// wasmlm.wasm) reaches no net/http, which would add some 2.8 MB to every
// page's download (0.8 MB gzipped); only the build tagged wasmlm_serve
// (wasmlm-serve.wasm, for lm.serve) has httpapi and with it net/http.
func TestPageBuildHasNoHTTP(t *testing.T) {
	deps := func(tags string) []string {
		cmd := exec.Command("go", "list", "-deps", "-tags", tags, "./cmd/wasm")
		cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		return strings.Fields(string(out))
	}
	for _, dep := range deps("wasmlm_simd") {
		require.False(t, dep == "net/http" || strings.HasPrefix(dep, "net/http/") || dep == module+"/httpapi",
			"the page's build (-tags wasmlm_simd) depends on %s: serving belongs in the wasmlm_serve build", dep)
	}
	require.Contains(t, deps("wasmlm_simd,wasmlm_serve"), module+"/httpapi", "the serve build (-tags wasmlm_simd,wasmlm_serve)")
}
