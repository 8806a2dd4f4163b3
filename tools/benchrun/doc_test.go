//go:build !js

package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tools/benchdoc"
)

// benchDoc is the benchmark page: its tables are the results files'.
const benchDoc = "../../docs/benchmarks.md"

// The tables of benchmark numbers in docs/benchmarks.md and web/README.md
// are bench/results*.json's: these tests compare every cell with the result
// it rounds, or every line with what -print prints, so a new `make bench`
// run and the documents cannot drift apart.

// markdownTable returns the rows (cells trimmed, header and separator left
// out) of the first table at or after the line that starts with heading in
// file.
func markdownTable(t *testing.T, file, heading string) [][]string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var rows [][]string
	found, inTable := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !found {
			found = strings.HasPrefix(line, heading)
			if !found || !strings.HasPrefix(line, "|") {
				continue // the heading is a line before the table, or the table's own header
			}
		}
		switch {
		case strings.HasPrefix(line, "|"):
			inTable = true
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "**", ""))
			}
			rows = append(rows, cells)
		case inTable:
			require.NoError(t, sc.Err())
			require.Greater(t, len(rows), 2, "%s: the table after %q", file, heading)
			return rows[2:]
		}
	}
	require.NoError(t, sc.Err())
	require.True(t, inTable, "%s: no table after a line starting %q", file, heading)
	return rows[2:]
}

// sameNumber requires cell to be v rounded to as many decimals as cell
// has, with the suffix (such as "×") it has.
func sameNumber(t *testing.T, v float64, cell, suffix, what string) {
	t.Helper()
	num, ok := strings.CutSuffix(strings.TrimSpace(cell), suffix)
	require.True(t, ok, "%s: %q should end in %q", what, cell, suffix)
	decimals := 0
	if _, frac, ok := strings.Cut(num, "."); ok {
		decimals = len(frac)
	}
	assert.Equal(t, strconv.FormatFloat(v, 'f', decimals, 64), num, "%s: the document says %s, the results %v", what, cell, v)
}

// resultsByModel indexes the decode tokens/s after the short prompt by host
// and model name.
func resultsByModel(t *testing.T, rep Report) map[[2]string]float64 {
	t.Helper()
	out := map[[2]string]float64{}
	for _, r := range shortPrompt(rep) {
		require.Empty(t, r.Error, "%s on %s", r.Model, r.Host)
		out[[2]string{r.Host, r.Model}] = r.DecodeTokensPerSecond
	}
	return out
}

// modelOfLabel turns a table row label ("stories15M Q4_K¹", "110M Q8_0",
// "stories260K F16 (default)") into a result's model name.
func modelOfLabel(label string) string {
	label = strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(label, "(default)")), "¹")
	shape, typ, _ := strings.Cut(label, " ")
	if !strings.HasPrefix(shape, "stories") {
		shape = "stories" + shape
	}
	if shape == "stories260K" {
		return shape
	}
	return shape + "-" + typ
}

func readResults(t *testing.T) Report {
	t.Helper()
	rep, err := readReport("../../bench/results.json")
	require.NoError(t, err)
	return rep
}

// The benchmark page's table of decode tokens/s per model and host.
func TestBenchmarksDecodeTableIsResults(t *testing.T) {
	decode := resultsByModel(t, readResults(t))
	hosts := []string{"native", "wasm", "wasm-simd", "chromium", "chromium-simd", "chromium-simd-2w"}
	rows := markdownTable(t, benchDoc, "Decode tokens/s (prompt tokens/s and TTFT in `bench/results.json`)")
	require.Len(t, rows, 9, "the default model and two shapes in four types")
	for _, row := range rows {
		require.Len(t, row, 1+len(hosts), "%v", row)
		model := modelOfLabel(row[0])
		for i, h := range hosts {
			v, ok := decode[[2]string{h, model}]
			require.True(t, ok, "no result for %s on %s", model, h)
			sameNumber(t, v, row[1+i], "", model+" on "+h)
		}
	}
}

// web/README.md's table of one against two workers.
func TestWebREADMEWorkersTableIsResults(t *testing.T) {
	decode := resultsByModel(t, readResults(t))
	rows := markdownTable(t, "../../web/README.md", "| model | 1 worker, SIMD |")
	require.Len(t, rows, 8)
	for _, row := range rows {
		require.Len(t, row, 7, "%v", row)
		model := modelOfLabel(row[0])
		for i, hosts := range [][2]string{{"chromium-simd", "chromium-simd-2w"}, {"chromium", "chromium-2w"}} {
			one, two := decode[[2]string{hosts[0], model}], decode[[2]string{hosts[1], model}]
			require.Positive(t, one, "%s on %s", model, hosts[0])
			require.Positive(t, two, "%s on %s", model, hosts[1])
			sameNumber(t, one, row[1+3*i], "", model+" on "+hosts[0])
			sameNumber(t, two, row[2+3*i], "", model+" on "+hosts[1])
			sameNumber(t, two/one, row[3+3*i], "×", model+" on "+hosts[1]+" against one worker")
		}
	}
}

// The benchmark page's table against the peers: our numbers are
// chromium-simd's, the peers' are bench/peers.json's, and the ratios are
// theirs.
func TestBenchmarksPeerTableIsResults(t *testing.T) {
	rep := readResults(t)
	decode := resultsByModel(t, rep)
	rows := markdownTable(t, benchDoc, "| shape / type | peer |")
	require.NotEmpty(t, rows)
	for _, row := range rows {
		require.Len(t, row, 5, "%v", row)
		shape, types, _ := strings.Cut(row[0], " ")
		ts := strings.Split(types, " / ")
		peers := strings.Split(row[2], " / ")
		ours := strings.Split(strings.TrimSuffix(row[3], " (one worker)"), " / ")
		ratios := strings.Split(row[4], " / ")
		require.Len(t, peers, len(ts), "%v", row)
		require.Len(t, ours, len(ts), "%v", row)
		require.Len(t, ratios, len(ts), "%v", row)
		for i, typ := range ts {
			model := modelOfLabel(shape + " " + typ)
			what := fmt.Sprintf("%s, %s", model, row[1])
			v, ok := decode[[2]string{"chromium-simd", model}]
			require.True(t, ok, "no chromium-simd result for %s", model)
			sameNumber(t, v, ours[i], "", what+": ours")
			var peer float64
			for _, p := range rep.Peers.Peers {
				if "stories"+shape == p.Shape && typ == p.Type && strconv.FormatFloat(p.DecodeTokensPerSecond, 'f', -1, 64) == strings.TrimSuffix(peers[i], ".0") {
					peer = p.DecodeTokensPerSecond
				}
			}
			require.Positive(t, peer, "%s: no peer of %s %s at %s tokens/s in peers.json", what, shape, typ, peers[i])
			sameNumber(t, v/peer, ratios[i], "×", what+": ratio")
		}
	}
}

// docs/benchmarks.md and web/README.md give the range of the SIMD kernels'
// speed-up of decoding in Chromium over the pure-Go kernels.
func TestBenchmarksSIMDSpeedupIsResults(t *testing.T) {
	decode := resultsByModel(t, readResults(t))
	lo, hi := 0.0, 0.0
	for key, simd := range decode {
		if key[0] != "chromium-simd" {
			continue
		}
		pure, ok := decode[[2]string{"chromium", key[1]}]
		require.True(t, ok, "no chromium result for %s", key[1])
		r := simd / pure
		if lo == 0 || r < lo {
			lo = r
		}
		hi = max(hi, r)
	}
	want := fmt.Sprintf("%.1f–%.1f×", lo, hi)
	for _, file := range []string{benchDoc, "../../web/README.md"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Contains(t, strings.Join(strings.Fields(string(b)), " "), want, file)
	}
}

// The benchmark page's history: decode speed before and after the
// architecture table replaced the per-family code, per host, is what
// -compare computes from the two runs kept in bench/history.
func TestBenchmarksHistoryIsBenchHistory(t *testing.T) {
	before, err := readReport("../../bench/history/2026-11-30-before-arch-table.json")
	require.NoError(t, err)
	after, err := readReport("../../bench/history/2026-11-30-after-arch-table.json")
	require.NoError(t, err)
	want := compareRuns(before, after)
	rows := markdownTable(t, benchDoc, "Before and after the architecture table")
	require.Len(t, rows, len(want))
	for i, c := range want {
		row := rows[i]
		require.Len(t, row, 6, "%v", row)
		assert.Equal(t, c.Host, row[0])
		assert.Equal(t, strconv.Itoa(c.Models), row[1], c.Host)
		sameNumber(t, c.Before, row[2], "", c.Host+" before")
		sameNumber(t, c.After, row[3], "", c.Host+" after")
		sameNumber(t, c.Ratio, row[4], "×", c.Host+" ratio")
		lo, hi, ok := strings.Cut(strings.TrimSuffix(row[5], "×"), "–")
		require.True(t, ok, "%s: %q is a range", c.Host, row[5])
		sameNumber(t, c.MinRatio, lo, "", c.Host+" lowest ratio")
		sameNumber(t, c.MaxRatio, hi, "", c.Host+" highest ratio")
	}
}

// compareRuns takes geometric means over the models both runs have, per host.
func TestCompareRuns(t *testing.T) {
	r := func(host, model string, v float64) Result {
		return Result{Host: host, Model: model, DecodeTokensPerSecond: v}
	}
	before := Report{Results: []Result{r("native", "a", 10), r("native", "b", 40), r("wasm", "a", 5), r("native", "gone", 1)}}
	after := Report{Results: []Result{r("native", "a", 20), r("native", "b", 40), r("wasm", "a", 4), r("wasm", "new", 9)}}
	got := compareRuns(before, after)
	require.Len(t, got, 2)
	assert.Equal(t, "native", got[0].Host)
	assert.Equal(t, 2, got[0].Models)
	assert.InDelta(t, 20, got[0].Before, 1e-9) // √(10·40)
	assert.InDelta(t, math.Sqrt(800), got[0].After, 1e-9)
	assert.InDelta(t, math.Sqrt2, got[0].Ratio, 1e-9)
	assert.Equal(t, []float64{1, 2}, []float64{got[0].MinRatio, got[0].MaxRatio})
	assert.Equal(t, runChange{Host: "wasm", Models: 1, Before: 5, After: 4, Ratio: 0.8, MinRatio: 0.8, MaxRatio: 0.8}, got[1])
}

// The benchmark page's two more chromium-simd pairs of that history.
func TestBenchmarksHistoryRepeats(t *testing.T) {
	readme, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	for _, n := range []string{"2", "3"} {
		before, err := readReport("../../bench/history/2026-11-30-before-arch-table-chromium-simd-" + n + ".json")
		require.NoError(t, err)
		after, err := readReport("../../bench/history/2026-11-30-after-arch-table-chromium-simd-" + n + ".json")
		require.NoError(t, err)
		c := compareRuns(before, after)
		require.Len(t, c, 1)
		assert.Contains(t, string(readme), strconv.FormatFloat(c[0].Ratio, 'f', 2, 64)+"×", "pair %s", n)
	}
}

// The benchmark page's side-by-side tables and the targets against
// llama.cpp are what -print prints for bench/results-peers.json, line for
// line, and the page says how many targets were met.
func TestBenchmarksSideBySideIsResultsPeers(t *testing.T) {
	rep, readme := readmeHasSideBySide(t, "../../bench/results-peers.json", 3)
	ts := benchTargets(t).Peers.judge(sideBySide(rep))
	assert.Contains(t, string(readme), fmt.Sprintf("%d of %d targets met", metCount(ts), len(ts)))

	// The ranges the page gives of Chromium + SIMD against wllama.
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, rate := range []func(Result) float64{
		func(r Result) float64 { return r.PrefillTokensPerSecond },
		func(r Result) float64 { return r.DecodeTokensPerSecond },
	} {
		lo, hi := 0.0, 0.0
		for _, r := range sideBySide(rep) {
			ours, okOurs := r.By[oursHost]
			peer, okPeer := r.By["wllama-1t"]
			require.True(t, okOurs && okPeer, "%s %s %d", r.Shape, r.Type, r.Prompt)
			v := rate(ours) / rate(peer)
			if lo == 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
		}
		assert.Contains(t, text, fmt.Sprintf("%.1f–%.1f×", lo, hi))
	}
}

// TestBenchmarksArchsIsResultsArchs: the benchmark page's side-by-side tables of the
// other families' shapes (Qwen3-0.6B, Gemma-3-1B) are what -print prints
// for bench/results-archs.json, line for line.
func TestBenchmarksArchsIsResultsArchs(t *testing.T) {
	rep, _ := readmeHasSideBySide(t, "../../bench/results-archs.json", 2)
	shapes := map[string]bool{}
	for _, r := range rep.Results {
		shapes[r.Shape] = true
	}
	assert.Equal(t, map[string]bool{"qwen3-0.6b": true, "gemma3-1b": true}, shapes)
}

// TestBenchmarksHybridIsResultsHybrid: the benchmark page's side-by-side
// tables of the hybrids' shapes (LFM2-1.2B, Qwen3.5-0.8B) are what -print
// prints for bench/results-hybrid.json, line for line.
func TestBenchmarksHybridIsResultsHybrid(t *testing.T) {
	rep, _ := readmeHasSideBySide(t, "../../bench/results-hybrid.json", 2)
	shapes := map[string]bool{}
	for _, r := range rep.Results {
		shapes[r.Shape] = true
	}
	assert.Equal(t, map[string]bool{"lfm2-1.2b": true, "qwen35-0.8b": true}, shapes)
}

// TestBenchmarksNativeIsResultsNative: the benchmark page's native tables
// are what -print prints for bench/results-native.json, and it says how
// many of the native targets were met.
func TestBenchmarksNativeIsResultsNative(t *testing.T) {
	rep, readme := readmeHasSideBySide(t, "../../bench/results-native.json", 3)
	ts := benchTargets(t).Native.judge(sideBySide(rep))
	assert.Contains(t, string(readme), fmt.Sprintf("**%d of %d met**", metCount(ts), len(ts)))
}

// readmeHasSideBySide checks that the benchmark page holds, line for line,
// the n side-by-side tables printSideBySide prints for a results file, and
// returns the report and the page.
func readmeHasSideBySide(t *testing.T, results string, n int) (Report, []byte) {
	t.Helper()
	rep, err := readReport(results)
	require.NoError(t, err)
	var b strings.Builder
	printSideBySide(&b, rep, benchTargets(t))
	readme, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	tables := benchdoc.Tables(b.String())
	require.Len(t, tables, n, "prompt, decode (and targets)")
	for _, table := range tables {
		assert.Contains(t, string(readme), strings.Join(table, "\n")+"\n", "the page's copy of the table headed %s", table[0])
	}
	return rep, readme
}

// The benchmark page's memory table is what -print prints for
// bench/results-memory.json, line for line, and the page says how many
// models met the memory target.
func TestBenchmarksMemoryIsResultsMemory(t *testing.T) {
	rep, err := readReport("../../bench/results-memory.json")
	require.NoError(t, err)
	var b strings.Builder
	m := benchTargets(t).Memory
	printMemory(&b, rep, m)
	var table []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	require.Len(t, table, 4, "the TinyLlama and 3B shapes")
	readme, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	assert.Contains(t, string(readme), strings.Join(table, "\n")+"\n", "the page's copy of the memory table")
	met := 0
	rows := memoryRows(rep)
	for _, row := range rows {
		r, ok := row.By[oursHost]
		if m.verdict(r, ok) == "met" {
			met++
		}
	}
	assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), fmt.Sprintf("%d of %d models meet it", met, len(rows)))
}

// The renderer peaks the benchmark page gives of the memory runs kept in
// bench/history: repeats with the model cache, one without it, and runs
// whose prompt fills the context.
func TestBenchmarksMemoryHistory(t *testing.T) {
	readme, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, name := range []string{"2026-11-30-memory-1", "2026-11-30-memory-2", "2026-11-30-memory-3", "2026-11-30-memory-no-cache",
		"2026-11-30-memory-full-context-tinyllama", "2026-11-30-memory-full-context-llama3b",
		"2026-12-01-memory-repeat", "2026-12-01-memory-no-cache"} {
		rep, err := readReport("../../bench/history/" + name + ".json")
		require.NoError(t, err)
		for _, r := range rep.Results {
			if r.Host != oursHost {
				continue
			}
			require.Empty(t, r.Error, name)
			require.Positive(t, r.ProcessPeakRSSBytes, name)
			assert.Contains(t, text, strings.TrimSuffix(mb(float64(r.ProcessPeakRSSBytes)), " MB"), "%s: %s", name, r.Model)
			assert.Equal(t, strings.HasSuffix(name, "no-cache"), strings.Contains(r.LoadOptions, "cache: false"), name)
		}
	}
}

// TestBenchmarksGrammarIsResultsGrammar: the benchmark page's tables of
// constrained sampling's cost are what -print prints for
// bench/results-grammar.json, line for line, and it says how many of the
// targets were met.
func TestBenchmarksGrammarIsResultsGrammar(t *testing.T) {
	rep, err := readReport("../../bench/results-grammar.json")
	require.NoError(t, err)
	var b strings.Builder
	g := benchTargets(t).Grammar
	printGrammar(&b, rep, g)
	tables := benchdoc.Tables(b.String())
	require.Len(t, tables, 3, "decode, masks, targets")
	readme, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	for _, table := range tables {
		assert.Contains(t, string(readme), strings.Join(table, "\n")+"\n", "the page's copy of the table headed %s", table[0])
	}
	met := 0
	ts := grammarTargets(rep, g)
	for _, g := range ts {
		if g.Measurable && g.Met {
			met++
		}
	}
	assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), fmt.Sprintf("%d of %d targets met", met, len(ts)))
}

// embedHeading starts the benchmark page's section on the embedding
// benchmark.
const embedHeading = "## Embeddings: MiniLM-L6 and BGE-base shapes"

// TestBenchmarksEmbedIsResultsEmbed: the benchmark page's tables of
// embeddings a second are what -print prints for bench/results-embed.json,
// line for line, and it says how many rows meet the target.
func TestBenchmarksEmbedIsResultsEmbed(t *testing.T) {
	rep, err := readReport("../../bench/results-embed.json")
	require.NoError(t, err)
	readme, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	require.Contains(t, string(readme), embedHeading+"\n")
	var b strings.Builder
	e := benchTargets(t).Embed
	printEmbed(&b, rep, e)
	tables := benchdoc.Tables(b.String())
	require.Len(t, tables, 2, "embeddings/s, target")
	for _, table := range tables {
		assert.Contains(t, string(readme), strings.Join(table, "\n")+"\n", "the page's copy of the table headed %s", table[0])
	}
	ts := embedTargets(embedRows(rep), e)
	met := 0
	for _, x := range ts {
		if x.Met {
			met++
		}
	}
	assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), fmt.Sprintf("%d of %d met", met, len(ts)))
}

// TestBenchmarksPageBlocksAreResults: every table block of the benchmark
// page is, line for line, the table `make bench` prints for the results
// file it names, and the page keeps every table it prints of those files
// (bench/results-serve.json's block is tools/servebench's to check).
func TestBenchmarksPageBlocksAreResults(t *testing.T) {
	page, err := os.ReadFile(benchDoc)
	require.NoError(t, err)
	tg := benchTargets(t)
	kept := map[string]map[int]bool{}
	for _, m := range benchdoc.Block.FindAllStringSubmatch(string(page), -1) {
		name, text := m[1], m[3]
		if name == "bench/results-serve.json" {
			continue
		}
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		rep, err := readReport("../../" + name)
		require.NoError(t, err, "a block names %s", name)
		var b strings.Builder
		docTables(&b, rep, tg)
		tables := benchdoc.Tables(b.String())
		require.LessOrEqual(t, n, len(tables), "%s has %d tables", name, len(tables))
		assert.Equal(t, benchdoc.Text(tables[n-1]), text, "the page's table %d of %s", n, name)
		if kept[name] == nil {
			kept[name] = map[int]bool{}
		}
		kept[name][n] = true
	}
	for _, mode := range []string{"peers", "archs", "hybrid", "native", "memory", "grammar", "embed", "webgpu"} {
		md, err := modeOf(mode)
		require.NoError(t, err)
		rep, err := readReport("../../" + md.out)
		require.NoError(t, err)
		var b strings.Builder
		docTables(&b, rep, tg)
		for n := range benchdoc.Tables(b.String()) {
			assert.True(t, kept[md.out][n+1], "the page keeps no block of table %d of %s", n+1, md.out)
		}
	}
}

// TestFrontPageSummaryIsResults: the README's one table of speeds is
// TinyLlama Q4_0's after the 128-token prompt in the runs it cites, each
// row the host of its run, and it names the days of those runs.
func TestFrontPageSummaryIsResults(t *testing.T) {
	rows := markdownTable(t, "../../README.md", "| runtime | prompt tokens/s | decode tokens/s |")
	runs := []struct{ file, host string }{
		{"results-peers.json", "chromium-auto"}, {"results-peers.json", "chromium-simd"}, {"results-peers.json", "wllama-1t"}, {"results-peers.json", "llama.cpp-1t"},
		{"results-native.json", "native"}, {"results-native.json", "llama.cpp-1t"},
	}
	require.Len(t, rows, len(runs))
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for i, run := range runs {
		rep, err := readReport("../../bench/" + run.file)
		require.NoError(t, err)
		day, _, _ := strings.Cut(rep.Machine.Date, "T")
		assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), "run of "+day, run.file)
		var found bool
		for _, r := range shortPrompt(rep) {
			if r.Host == run.host && r.Model == "tinyllama-Q4_0" && r.Error == "" {
				found = true
				sameNumber(t, r.PrefillTokensPerSecond, rows[i][1], "", run.host+" prompt, "+run.file)
				sameNumber(t, r.DecodeTokensPerSecond, rows[i][2], "", run.host+" decode, "+run.file)
			}
		}
		assert.True(t, found, "no tinyllama-Q4_0 result on %s in %s", run.host, run.file)
	}
}
