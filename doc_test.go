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
	slices.Sort(packages)
	slices.Sort(listed)
	assert.Equal(t, packages, listed)
}
