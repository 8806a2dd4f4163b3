//go:build !js

package simdgen

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The kernels run in JavaScript hosts: these tests hand the module to
// Node's and workerd's WebAssembly engines (V8), which validate it, and run
// web/simd.js's own tests in both.

// repoRoot is the repository root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

// needTool returns the path of a tool, or skips the test when it is missing
// on a developer's machine; in CI (CI set) a missing tool fails the test.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is missing (%s)", name, install)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// jsSources are the files the JavaScript tests load. Reading them in Go
// makes go test's result cache depend on them, which it would not
// otherwise (a child process opens them).
var jsSources = []string{
	"web/simd.js", "tools/simd_check.mjs", "tools/simd_js.test.mjs", "tools/simd_workerd_test.mjs",
	"internal/simdgen/kernels.wasm",
}

func readSources(t *testing.T, root string) {
	t.Helper()
	for _, p := range jsSources {
		_, err := os.ReadFile(filepath.Join(root, p))
		require.NoError(t, err)
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v:\n%s", name, args, out)
	return string(out)
}

// TestExportsMatchGoImports compiles kernels.wasm in Node and checks its
// exports against the //go:wasmimport declarations of engine/tensor: every
// kernel the Go side imports exists, and the module imports only Go's memory.
func TestExportsMatchGoImports(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	// A Node without relaxed SIMD (before 20, whose flag relaxedFlags
	// passes) cannot compile the relaxed module: it says so.
	const script = `let m;
try { m = new WebAssembly.Module(require("fs").readFileSync(process.argv[1])); }
catch (e) { console.log(JSON.stringify({unsupported: String(e)})); process.exit(0); }
console.log(JSON.stringify({exports: WebAssembly.Module.exports(m), imports: WebAssembly.Module.imports(m)}));`
	moduleExports := func(file string) []string {
		out := run(t, ".", node, append(relaxedFlags(node), "-e", script, file)...)
		var desc struct {
			Unsupported string
			Exports     []struct{ Name, Kind string }
			Imports     []struct{ Module, Name, Kind string }
		}
		require.NoError(t, json.Unmarshal([]byte(out), &desc), out)
		if desc.Unsupported != "" {
			return nil
		}
		require.Equal(t, []struct{ Module, Name, Kind string }{{MemoryModule, MemoryName, "memory"}}, desc.Imports)
		var exports []string
		for _, e := range desc.Exports {
			require.Equal(t, "function", e.Kind, e.Name)
			exports = append(exports, e.Name)
		}
		return exports
	}
	exports := moduleExports("kernels.wasm")
	require.NotEmpty(t, exports, "kernels.wasm does not compile in this Node")
	if relaxed := moduleExports("kernels-relaxed.wasm"); relaxed != nil {
		require.Equal(t, exports, relaxed, "the relaxed module's exports")
	} else {
		t.Log("this Node cannot compile kernels-relaxed.wasm (no relaxed SIMD): it is compiled and run in workerd's test (TestSimdJSInWorkerd)")
	}

	_, params := goImports(t)
	var imports []string
	for name := range params {
		if name != "available" { // the host's answer, not a kernel
			imports = append(imports, name)
		}
	}
	slices.Sort(exports)
	slices.Sort(imports)
	require.Equal(t, exports, imports)
}

// TestSimdJSInNode runs web/simd.js's tests (tools/simd_js.test.mjs), and
// again with relaxed SIMD enabled where Node has it behind a flag.
func TestSimdJSInNode(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	readSources(t, repoRoot(t))
	run(t, repoRoot(t), node, "--test", filepath.Join("tools", "simd_js.test.mjs"))
	if flags := relaxedFlags(node); len(flags) > 0 {
		run(t, repoRoot(t), node, append(flags, "--test", filepath.Join("tools", "simd_js.test.mjs"))...)
	}
}

// relaxedFlags are the Node flags that enable relaxed SIMD: Node 20's
// --experimental-wasm-relaxed-simd, or none where Node does not know it
// (relaxed SIMD is on by default from Node 22).
func relaxedFlags(node string) []string {
	if err := exec.Command(node, "--experimental-wasm-relaxed-simd", "-e", "0").Run(); err == nil {
		return []string{"--experimental-wasm-relaxed-simd"}
	}
	return nil
}

// TestSimdJSInWorkerd runs tools/simd_workerd_test.mjs in workerd (the
// runtime of Cloudflare Workers), where the kernels arrive as a compiled
// module from a wasm import.
func TestSimdJSInWorkerd(t *testing.T) {
	root := repoRoot(t)
	bin := filepath.Join(root, "node_modules", ".bin", "workerd")
	if _, err := os.Stat(bin); err != nil {
		needTool(t, bin, "npm ci installs it from package-lock.json")
	}
	readSources(t, root)
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, root) // workerd embeds relative paths only
	require.NoError(t, err)
	embed := func(p string) string { return filepath.ToSlash(filepath.Join(rel, p)) }
	cfg := fmt.Sprintf(`using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (services = [(name = "main", worker = .worker)]);
const worker :Workerd.Worker = (
  modules = [
    (name = "main.mjs", esModule = embed %q),
    (name = "simd.js", esModule = embed %q),
    (name = "simd_check.mjs", esModule = embed %q),
    (name = "kernels.wasm", wasm = embed %q),
    (name = "kernels-relaxed.wasm", wasm = embed %q),
    (name = "kernels.bin", data = embed %q),
  ],
  compatibilityDate = "2025-06-01",
);
`, embed("tools/simd_workerd_test.mjs"), embed("web/simd.js"), embed("tools/simd_check.mjs"),
		embed("internal/simdgen/kernels.wasm"), embed("internal/simdgen/kernels-relaxed.wasm"), embed("internal/simdgen/kernels.wasm"))
	path := filepath.Join(dir, "simd.capnp")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	out := run(t, dir, bin, "test", path)
	require.Contains(t, out, "bit-exact")
	t.Log(strings.TrimSpace(out))
}
