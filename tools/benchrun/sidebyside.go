//go:build !js

package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
)

// The side-by-side tables put our numbers next to the peers measured in the
// same run on the same files (llama.cpp natively with 1 and 2 threads,
// wllama in the same Chromium with 1 thread), and judge the targets of
// bench/targets.json: the browser's against llama.cpp's where the browser
// ran (peers), native's against llama.cpp's otherwise (native).

// baseHost is the peer the ratio columns divide by, and oursHost the host
// of the browser's columns and of the memory table.
const (
	baseHost = "llama.cpp-1t"
	oursHost = "chromium-simd"
)

// sideBySideHosts are the columns of the side-by-side tables, in order: the
// peers, then ours (those that ran).
func sideBySideHosts() []string {
	return []string{"llama.cpp-1t", "llama.cpp-2t", "wllama-1t", "native", "native-2t", "wasm-simd", "chromium-simd", "chromium-auto", "chromium-simd-2w"}
}

// hostLabel is a host's column heading.
func hostLabel(h string) string {
	switch h {
	case "llama.cpp-1t":
		return "llama.cpp, 1 thread"
	case "llama.cpp-2t":
		return "llama.cpp, 2 threads"
	case "wllama-1t":
		return "wllama, 1 thread"
	case "native-2t":
		return "native, 2 threads"
	case "chromium-simd":
		return "Chromium + SIMD"
	case "chromium-simd-2w":
		return "Chromium + SIMD, 2 workers"
	case "chromium-auto":
		return "Chromium + SIMD, workers: 'auto'"
	}
	return h
}

// target is one ratio target for one model and prompt.
type target struct {
	What          string  // "prompt" or "decode"
	Shape, Type   string  //
	Prompt        int     // prompt length asked for
	Ours, Peer    float64 // tokens/s, 0 when not measured
	Ratio, Needed float64
	Verdict       string // met, missed or not measured
}

// row is one model and prompt length of the side-by-side tables.
type row struct {
	Shape, Type string
	Prompt      int
	By          map[string]Result // host → its result, errors left out
}

// sideBySide groups the results the peers' base host has by model and
// prompt, in the report's order.
func sideBySide(rep Report) []row {
	var rows []row
	find := func(r Result) int {
		return slices.IndexFunc(rows, func(x row) bool {
			return x.Shape == r.Shape && x.Type == r.TensorType && x.Prompt == promptOf(r, rep.Settings)
		})
	}
	for _, r := range rep.Results {
		if r.Host == baseHost && r.Error == "" && find(r) < 0 {
			rows = append(rows, row{Shape: r.Shape, Type: r.TensorType, Prompt: promptOf(r, rep.Settings), By: map[string]Result{}})
		}
	}
	for _, r := range rep.Results {
		if i := find(r); i >= 0 && r.Error == "" && slices.Contains(sideBySideHosts(), r.Host) {
			rows[i].By[r.Host] = r
		}
	}
	return rows
}

// printSideBySide writes the side-by-side tables and the targets of tg
// that fit the hosts that ran, as docs/benchmarks.md shows them.
func printSideBySide(w io.Writer, rep Report, tg Targets) {
	rows := sideBySide(rep)
	if len(rows) == 0 {
		return
	}
	var cols []string
	for _, h := range sideBySideHosts() {
		if slices.ContainsFunc(rows, func(r row) bool { _, ok := r.By[h]; return ok }) {
			cols = append(cols, h)
		}
	}
	header := func(extra ...string) {
		fmt.Fprint(w, "| model | prompt |")
		for _, h := range cols {
			fmt.Fprintf(w, " %s |", hostLabel(h))
		}
		for _, e := range extra {
			fmt.Fprintf(w, " %s |", e)
		}
		fmt.Fprint(w, "\n|---|--:|")
		for range len(cols) + len(extra) {
			fmt.Fprint(w, "--:|")
		}
		fmt.Fprintln(w)
	}
	ratio := func(r row, num, den string, rate func(Result) float64) string {
		a, okA := r.By[num]
		b, okB := r.By[den]
		if !okA || !okB || rate(b) <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", rate(a)/rate(b))
	}
	prompt := func(x Result) float64 { return x.PrefillTokensPerSecond }
	decode := func(x Result) float64 { return x.DecodeTokensPerSecond }
	// The ratio columns: Chromium's against the peers where it ran, else
	// native's against llama.cpp's with as many threads.
	type ratioCol struct{ label, num, den string }
	promptRatios := []ratioCol{{"Chromium + SIMD ÷ llama.cpp 1 thread", oursHost, baseHost}}
	decodeRatios := append(slices.Clip(promptRatios), ratioCol{"Chromium + SIMD ÷ wllama 1 thread", oursHost, "wllama-1t"})
	if slices.Contains(cols, "chromium-auto") {
		promptRatios = append(promptRatios,
			ratioCol{"workers: 'auto' ÷ llama.cpp 1 thread", "chromium-auto", baseHost},
			ratioCol{"workers: 'auto' ÷ llama.cpp 2 threads", "chromium-auto", "llama.cpp-2t"})
	}
	if !slices.Contains(cols, oursHost) && slices.Contains(cols, "native") {
		promptRatios = []ratioCol{{"native ÷ llama.cpp, 1 thread", "native", baseHost}, {"native ÷ llama.cpp, 2 threads", "native-2t", "llama.cpp-2t"}}
		decodeRatios = promptRatios
	}
	labels := func(rc []ratioCol) []string {
		var out []string
		for _, c := range rc {
			out = append(out, c.label)
		}
		return out
	}

	fmt.Fprintf(w, "\nPrompt tokens/s (time to first token), side by side in one run on the same files:\n\n")
	header(labels(promptRatios)...)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s %s | %d |", r.Shape, r.Type, r.Prompt)
		for _, h := range cols {
			if x, ok := r.By[h]; ok {
				fmt.Fprintf(w, " %.1f (%.2f s%s) |", x.PrefillTokensPerSecond, x.TimeToFirstTokenMS/1000, workersNote(h, x))
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		for _, c := range promptRatios {
			fmt.Fprintf(w, " %s |", ratio(r, c.num, c.den, prompt))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "\nDecode tokens/s after that prompt:\n\n")
	header(labels(decodeRatios)...)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s %s | %d |", r.Shape, r.Type, r.Prompt)
		for _, h := range cols {
			if x, ok := r.By[h]; ok {
				v := fmt.Sprintf("%.1f", x.DecodeTokensPerSecond)
				if x.GeneratedTokens != rep.Settings.MaxTokens {
					v += fmt.Sprintf(" (%d tokens)", x.GeneratedTokens)
				}
				if n := workersNote(h, x); n != "" {
					v += " (" + n[2:] + ")"
				}
				fmt.Fprintf(w, " %s |", v)
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		for _, c := range decodeRatios {
			fmt.Fprintf(w, " %s |", ratio(r, c.num, c.den, decode))
		}
		fmt.Fprintln(w)
	}

	for _, r := range []RatioTargets{tg.Peers, tg.Native} {
		if r.hostsIn(cols) {
			printTargets(w, "Targets, "+r.About, r, r.judge(rows))
			return
		}
	}
}

// workersNote is ", N workers" for a run of the host that chooses its
// workers (chromium-auto), else nothing.
func workersNote(host string, r Result) string {
	if host != "chromium-auto" || r.Workers == 0 {
		return ""
	}
	if r.Workers == 1 {
		return ", 1 worker"
	}
	return fmt.Sprintf(", %d workers", r.Workers)
}

// judge measures t on row r, ours against peer by rate: the ratio and
// whether it is the Needed one, or "not measured" when either did not run.
func (t *target) judge(r row, ours, peer string, rate func(Result) float64) {
	o, okOurs := r.By[ours]
	p, okPeer := r.By[peer]
	if !okOurs || !okPeer || rate(p) <= 0 {
		t.Verdict = "not measured"
		return
	}
	t.Ours, t.Peer = rate(o), rate(p)
	t.Ratio = t.Ours / t.Peer
	t.Verdict = "missed"
	if t.Ratio >= t.Needed {
		t.Verdict = "met"
	}
}

// metCount is how many of ts were met.
func metCount(ts []target) int {
	n := 0
	for _, t := range ts {
		if t.Verdict == "met" {
			n++
		}
	}
	return n
}

// printTargets writes a table of targets under heading, with how many
// were met, ours and the peer's columns as r labels them.
func printTargets(w io.Writer, heading string, r RatioTargets, ts []target) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: %d of %d met:\n\n", heading, metCount(ts), len(ts))
	fmt.Fprintf(w, "| target | model | prompt | %s | %s | ratio | |\n", r.OursLabel, r.PeerLabel)
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|---|")
	for _, t := range ts {
		what := fmt.Sprintf("%s tok/s ≥ %s×", t.What, strconv.FormatFloat(t.Needed, 'f', -1, 64))
		if t.Verdict == "not measured" {
			fmt.Fprintf(w, "| %s | %s %s | %d | — | — | — | not measured |\n", what, t.Shape, t.Type, t.Prompt)
			continue
		}
		fmt.Fprintf(w, "| %s | %s %s | %d | %.1f | %.1f | %.2f× | %s |\n", what, t.Shape, t.Type, t.Prompt, t.Ours, t.Peer, t.Ratio, t.Verdict)
	}
}
