//go:build !js

package wasmlm_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// npmPackArg is the folder an `npm pack` command in a document packs.
var npmPackArg = regexp.MustCompile("npm pack ([^\\s`;&|)]+)")

// TestDocsNPMPackALocalFolder: every `npm pack` a document shows names its
// folder as a path npm reads as one (./build/npm): npm takes build/npm, like
// any owner/name, for a GitHub repository and runs git ls-remote on it.
// tests/e2e's npmPackage packs the same way, from the repository's root.
func TestDocsNPMPackALocalFolder(t *testing.T) {
	n := 0
	for _, path := range markdownFiles(t) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, m := range npmPackArg.FindAllStringSubmatch(string(text), -1) {
			arg := m[1]
			if strings.HasPrefix(arg, "-") {
				continue // an option: the folder is the current one
			}
			n++
			assert.True(t, strings.HasPrefix(arg, "./") || strings.HasPrefix(arg, "../") || strings.HasPrefix(arg, "/"),
				"%s: npm pack %s: npm reads a folder without ./ as a GitHub repository", path, arg)
		}
	}
	assert.GreaterOrEqual(t, n, 2, "README.md and web/README.md show npm pack ./build/npm")
}
