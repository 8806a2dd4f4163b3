//go:build !js

package wasmlm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEGoSnippetsCompile: the Go code of the README's "In a Go
// program" compiles against the module as it is, inside a main function
// that provides what the snippets take as given (ctx, mux) and uses what
// they leave (res, embs, api).
func TestREADMEGoSnippetsCompile(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(readme)
	start := strings.Index(text, "\n## In a Go program\n")
	require.GreaterOrEqual(t, start, 0, "README has no section \"In a Go program\"")
	section := text[start+1:]
	section = section[:strings.Index(section, "\n## ")]
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 2, "the section's Go snippets: using the engine, mounting the API")
	src := `package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
)

func main() {
	ctx := context.Background()
	mux := http.NewServeMux()
` + blocks[0][1] + blocks[1][1] + `	_, _, _, _, _ = res, embs, api, session, err
}
`
	// A module of its own that takes this one from the working tree.
	dir := t.TempDir()
	root, err := os.Getwd()
	require.NoError(t, err)
	gomod := "module snippet\n\ngo 1.26.0\n\nrequire github.com/wasmlm/wasmlm v0.0.0\n\nreplace github.com/wasmlm/wasmlm => " + root + "\n"
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's Go snippets do not compile:\n%s\n%s", out, src)
}
