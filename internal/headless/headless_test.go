//go:build !js

package headless_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/headless"
)

// ensureDeps is the part of tools/ensure-deps.sh that decides whether a
// browser is there: chrome_names and find_chrome.
func ensureDeps(t *testing.T) (names []string, findChrome string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "tools", "ensure-deps.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?ms)^chrome_names="([^"]*)"\n(find_chrome\(\) \{\n.*?\n\})\n`).FindSubmatch(src)
	require.NotNil(t, m, "tools/ensure-deps.sh has no chrome_names line followed by find_chrome")
	return strings.Fields(string(m[1])), string(m[0])
}

// TestEnsureDepsLooksForTheSameNames fails when the names
// tools/ensure-deps.sh accepts drift from the ones Path looks for: the
// script would then install Chromium needlessly, or accept a browser the
// tests cannot find.
func TestEnsureDepsLooksForTheSameNames(t *testing.T) {
	names, _ := ensureDeps(t)
	require.Equal(t, headless.Names(), names, "tools/ensure-deps.sh's chrome_names")
}

// TestEnsureDepsFindsWhatPathFinds runs the script's find_chrome and Path
// with the same CHROME_PATH and PATH: a browser under each name, several
// (the earlier name wins, whatever the order of the directories on PATH),
// none, and CHROME_PATH set or empty.
func TestEnsureDepsFindsWhatPathFinds(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	_, findChrome := ensureDeps(t)
	names := headless.Names()
	last, secondLast := names[len(names)-1], names[len(names)-2]
	type setup struct {
		chromePath string
		path       [][]string // the browsers in each directory on PATH
	}
	cases := map[string]setup{
		"none":                   {path: [][]string{{}}},
		"CHROME_PATH":            {chromePath: filepath.Join(t.TempDir(), "chrome"), path: [][]string{names}},
		"empty CHROME_PATH":      {chromePath: "", path: [][]string{{last}}},
		"all":                    {path: [][]string{names}},
		"two, the later first":   {path: [][]string{{last}, {secondLast}}},
		"one name in two places": {path: [][]string{{last}, {last}}},
	}
	for _, name := range names {
		cases["only "+name] = setup{path: [][]string{{name}}}
	}
	for label, c := range cases {
		t.Run(label, func(t *testing.T) {
			var dirs []string
			for _, browsers := range c.path {
				dir := t.TempDir()
				for _, name := range browsers {
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
				}
				dirs = append(dirs, dir)
			}
			t.Setenv("PATH", strings.Join(dirs, string(os.PathListSeparator)))
			t.Setenv("CHROME_PATH", c.chromePath)

			want, err := headless.Path()
			out, shErr := exec.Command(bash, "-c", findChrome+"find_chrome").Output()
			if err != nil {
				require.Error(t, shErr, "find_chrome found %q where Path found nothing", out)
				return
			}
			require.NoError(t, shErr, "find_chrome found nothing where Path found %s", want)
			require.Equal(t, want, strings.TrimSpace(string(out)))
		})
	}
}
