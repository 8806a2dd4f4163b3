//go:build linux && !js

package headless

import (
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessType: Chromium's children rewrite their command lines, the
// arguments then separated by spaces rather than NULs.
func TestProcessType(t *testing.T) {
	for cmdline, want := range map[string]string{
		"/usr/lib/chromium/chromium\x00--headless\x00--no-sandbox\x00":                               "browser",
		"/usr/lib/chromium/chromium\x00--type=gpu-process\x00--no-sandbox\x00":                       "gpu-process",
		"/usr/lib/chromium/chromium --type=renderer --lang=en-US --num-raster-threads=1\x00\x00\x00": "renderer",
		"/usr/lib/chromium/chromium --type=zygote":                                                   "zygote",
		"/usr/lib/chromium/chromium --type=utility --utility-sub-type=network.mojom.NetworkService":  "utility",
	} {
		assert.Equal(t, want, processType([]byte(cmdline)), "%q", cmdline)
	}
}

// TestProcesses: a browser with a page has its browser process and a
// renderer, each with its memory, and ResetPeaks writes every process's
// clear_refs (its peak is then near its resident memory). Needs Chromium (make test
// installs it; CI fails without it).
func TestProcesses(t *testing.T) {
	if _, err := Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, stop, err := Start("wasmlm-headless-test-")
	require.NoError(t, err)
	defer stop()
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate("data:text/html,<p>hi")))

	ps, err := Processes(tab)
	require.NoError(t, err)
	types := map[string]int{}
	for _, p := range ps {
		types[p.Type]++
		assert.Positive(t, p.RSS, "%+v", p)
		assert.GreaterOrEqual(t, p.PeakRSS, p.RSS, "%+v", p)
		assert.LessOrEqual(t, p.Anon, p.RSS, "%+v", p)
	}
	assert.Equal(t, 1, types["browser"], "%v", types)
	assert.Positive(t, types["renderer"], "%v", types)
	rs, err := Renderers(tab)
	require.NoError(t, err)
	assert.Len(t, rs, types["renderer"])

	require.NoError(t, ResetPeaks(tab))
	after, err := Processes(tab)
	require.NoError(t, err)
	for _, p := range after {
		// The reset peak is the resident memory then, and a little more since.
		assert.Less(t, p.PeakRSS, p.RSS+64<<20, "%+v", p)
	}
	_, err = Processes(t.Context())
	assert.Error(t, err, "not a browser's context")
}
