//go:build linux && !race

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliArgsEnv carries a command line (JSON) to this test binary run as the
// CLI itself (TestMain), so a test can run it under limits of its own.
const cliArgsEnv = "WASMLM_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(cliArgsEnv); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		os.Exit(run(context.Background(), argv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runCLILimited runs one command line in a process of its own whose
// address space is limited to kib KiB (ulimit -v), and returns its exit
// code and stderr.
func runCLILimited(t *testing.T, kib int, args ...string) (code int, stderr string) {
	t.Helper()
	argv, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command("sh", "-c", `ulimit -v "$1" && exec "$0"`, os.Args[0], strconv.Itoa(kib))
	cmd.Env = append(os.Environ(), cliArgsEnv+"="+string(argv))
	var errOut strings.Builder
	cmd.Stderr = &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &exit, errOut.String())
		return exit.ExitCode(), errOut.String()
	}
	return 0, errOut.String()
}

// Not under the race detector, whose runtime maps more address space than
// any ulimit -v here leaves.

// TestContextBeyondMemoryRefused: a -ctx beyond the trained length whose
// KV cache the process could not hold is refused before anything is
// allocated, naming what it would take and the bound (here the 4096 MiB a
// ulimit -v leaves; without one, the machine's memory), in generate, bench
// and serve; serve counts its slots together (two of 2,000,000 positions
// of the default model take about 5 GiB, one about 2.5).
func TestContextBeyondMemoryRefused(t *testing.T) {
	const limit = "more than the 4096 MiB of address space this process may map (ulimit -v)"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"generate", "-ctx", "8000000", "-p", "Once", "-n", "1"}, exitUsage,
			"generate: -ctx 8000000 positions beyond the model's trained 512 take about "},
		{[]string{"bench", "-ctx", "8000000", "-prompt", "4", "-n", "1", "-warmup", "0"}, exitError,
			"bench: -ctx 8000000 positions beyond the model's trained 512 take about "},
		{[]string{"serve", "-ctx", "2000000", "-slots", "2", "-addr", "127.0.0.1:0", "-web", ""}, exitError,
			"serve: -ctx 2000000 positions beyond the model's trained 512 take about "},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			code, errOut := runCLILimited(t, 4<<20, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.want)
			assert.Contains(t, errOut, limit)
			assert.NotContains(t, errOut, "out of memory")
		})
	}
	_, errOut := runCLILimited(t, 4<<20, "serve", "-ctx", "2000000", "-slots", "2", "-addr", "127.0.0.1:0", "-web", "")
	assert.Regexp(t, `take about \d+ MiB in 2 sessions with the weights \(a \d+ MiB KV cache each\)`, errOut)
}
