//go:build !js

package wasmlm_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocListsEveryPackage: the package list in doc.go names every package
// of the module (native and GOOS=js builds), and nothing else.
func TestDocListsEveryPackage(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^//\t([a-z0-9/]+) `).FindAllSubmatch(src, -1) {
		listed = append(listed, string(m[1]))
	}
	var packages []string
	for _, goos := range []string{"", "js"} {
		cmd := exec.Command("go", "list", "./...")
		if goos == "js" {
			cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		for _, p := range strings.Fields(string(out)) {
			if rel, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(packages, rel) {
				packages = append(packages, rel)
			}
		}
	}
	sorted := slices.Sorted(slices.Values(listed))
	slices.Sort(packages)
	assert.Equal(t, packages, sorted)

	// The product's list is in dependency order: each package imports only
	// packages listed below it (cmd/wasmlm also a tool, for bench -gen).
	product := listed[:slices.Index(listed, "internal/fmath")+1]
	for _, goos := range []string{"", "js"} {
		cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
		if goos == "js" {
			cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			pkg := strings.TrimPrefix(fields[0], module+"/")
			at := slices.Index(product, pkg)
			if at < 0 {
				continue // a tool, or the root package
			}
			for _, imp := range fields[1:] {
				rel, ok := strings.CutPrefix(imp, module+"/")
				if !ok || (pkg == "cmd/wasmlm" && rel == "internal/modelgen") {
					continue
				}
				assert.Greater(t, slices.Index(product, rel), at, "doc.go lists %s above %s, which imports it (GOOS=%s)", rel, pkg, goos)
			}
		}
	}
}
