//go:build !js

package wasmlm_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMakeHelpListsEveryTarget runs `make help`: it must list exactly the
// Makefile's .PHONY targets, each with a description (its "## target: ..."
// comment), so a new target cannot go undocumented.
func TestMakeHelpListsEveryTarget(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("make is missing (Debian package make)")
		}
		t.Skip("make is missing (Debian package make)")
	}
	src, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	var want []string
	for _, phony := range regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindAllSubmatch(src, -1) {
		want = append(want, strings.Fields(string(phony[1]))...)
	}
	require.NotEmpty(t, want, "the Makefile has no .PHONY line")

	cmd := exec.Command(makeBin, "-s", "help")
	// Run as a fresh make, not as a sub-make of a `make test`.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	out, err := cmd.Output()
	require.NoError(t, err, "make help")
	var listed []string
	for _, line := range strings.Split(string(out), "\n") {
		// "  target   description"; continuation lines start with spaces only.
		if rest, ok := strings.CutPrefix(line, "  "); ok && rest != "" && rest[0] != ' ' {
			f := strings.Fields(rest)
			require.Greater(t, len(f), 1, "make help lists %s without a description", f[0])
			listed = append(listed, f[0])
		}
	}
	slices.Sort(want)
	slices.Sort(listed)
	require.Equal(t, want, listed, "make help's targets (## comments) against .PHONY")
}
