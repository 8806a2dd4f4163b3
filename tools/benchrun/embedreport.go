//go:build !js

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The embedding benchmark's tables: embeddings a second per model and
// spec on every host, side by side, and the target of bench/targets.json's
// embed.

// embedMethod is Settings.Method in embed mode.
const embedMethod = "for each model, each host in turn (a process or a tab of its own) embeds, for each spec, batch texts of tokens tokens each " +
	"([CLS] and [SEP] included: whole words of BERT's vocabulary, modelgen.EmbedTexts, the same texts on every host, each checked to be that many tokens) " +
	"in one call (ours: Session.Embed, or the page's lm.embeddings.create; llama.cpp: one context of batch sequences, and one text after another), " +
	"in rounds to warm up for warmup_ms (at least one), then in rounds measured by the wall clock around the call; embeddings/s is batch over the median round"

// embedOursHost and embedBaseHost are the ratio column of the embeddings
// table: Chromium with one worker against native llama.cpp with one thread.
const (
	embedOursHost = "chromium-simd"
	embedBaseHost = "llama.cpp-1t"
)

// embedRow is one model and spec: each host's result, llama.cpp's the
// faster of its modes.
type embedRow struct {
	Model, Shape, Type string
	Tokens, Batch      int
	By                 map[string]EmbedResult // host → result, errors left out
}

// embedRows groups rep's embedding results by model and spec, in the
// order they ran.
func embedRows(rep Report) []embedRow {
	var rows []embedRow
	for _, r := range rep.Embeds {
		i := slices.IndexFunc(rows, func(x embedRow) bool { return x.Model == r.Model && x.Tokens == r.Tokens && x.Batch == r.Batch })
		if i < 0 {
			rows = append(rows, embedRow{Model: r.Model, Shape: r.Shape, Type: r.TensorType, Tokens: r.Tokens, Batch: r.Batch, By: map[string]EmbedResult{}})
			i = len(rows) - 1
		}
		if r.Error != "" {
			continue
		}
		if best, ok := rows[i].By[r.Host]; !ok || r.EmbeddingsPerSecond > best.EmbeddingsPerSecond {
			rows[i].By[r.Host] = r
		}
	}
	return rows
}

// ratio is host num's rate over host den's in r, if both ran.
func (r embedRow) ratio(num, den string) (float64, bool) {
	a, okA := r.By[num]
	b, okB := r.By[den]
	if !okA || !okB || b.EmbeddingsPerSecond <= 0 {
		return 0, false
	}
	return a.EmbeddingsPerSecond / b.EmbeddingsPerSecond, true
}

// label is a row's model as the tables show it: shape and type.
func (r embedRow) label() string { return r.Shape + " " + r.Type }

// embedVerdict is the embed target on one row.
type embedVerdict struct {
	Row        embedRow
	Ratio      float64
	Measurable bool
	Met        bool
}

// embedTargets judges the target e on every row of its shapes: its host's
// embeddings/s ≥ e.AtLeast × its peer's.
func embedTargets(rows []embedRow, e EmbedTarget) []embedVerdict {
	var out []embedVerdict
	for _, r := range rows {
		if !slices.Contains(e.Shapes, r.Shape) {
			continue
		}
		t := embedVerdict{Row: r}
		t.Ratio, t.Measurable = r.ratio(e.Host, e.Peer)
		t.Met = t.Measurable && t.Ratio >= e.AtLeast
		out = append(out, t)
	}
	return out
}

// printEmbed writes the embedding benchmark's tables, as docs/benchmarks.md
// shows them, and the target e.
func printEmbed(w io.Writer, rep Report, e EmbedTarget) {
	m, s := rep.Machine, rep.Settings
	fmt.Fprintf(w, "wasmlm embed benchmark, %s: %s, %d cores, %s; Go %s, Node %s, %s; load average %s → %s\n",
		m.Date, m.CPU, m.Cores, m.OS, m.GoVersion, m.NodeVersion, m.ChromiumVersion, m.LoadAverageStart, m.LoadAverageEnd)
	rows := embedRows(rep)
	var cols []string
	for _, h := range embedHostOrder() {
		if slices.ContainsFunc(rows, func(r embedRow) bool { _, ok := r.By[h]; return ok }) {
			cols = append(cols, h)
		}
	}
	fmt.Fprintf(w, "\nEmbeddings/s, side by side in one run on the same files and texts: texts of N tokens ([CLS] and [SEP] included), "+
		"B to a call; the median of %d rounds after %d ms of warm-up; llama.cpp's the faster of one context of B sequences and one text after another (¹: the latter):\n\n",
		s.Rounds, s.WarmupMS)
	fmt.Fprint(w, "| model | N × B |")
	for _, h := range cols {
		fmt.Fprintf(w, " %s |", hostLabel(h))
	}
	fmt.Fprintf(w, " %s ÷ %s | native ÷ %s | load |\n|---|--:|", hostLabel(embedOursHost), hostLabel(embedBaseHost), hostLabel(embedBaseHost))
	for range len(cols) + 3 {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d × %d |", r.label(), r.Tokens, r.Batch)
		for _, h := range cols {
			x, ok := r.By[h]
			switch {
			case !ok:
				fmt.Fprint(w, " — |")
			case x.Mode == modeSequential && x.Batch > 1:
				fmt.Fprintf(w, " %.1f¹ |", x.EmbeddingsPerSecond)
			default:
				fmt.Fprintf(w, " %.1f |", x.EmbeddingsPerSecond)
			}
		}
		for _, num := range []string{embedOursHost, "native"} {
			if v, ok := r.ratio(num, embedBaseHost); ok {
				fmt.Fprintf(w, " %.2f× |", v)
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		fmt.Fprintf(w, " %s |\n", loadRange(r))
	}
	printEmbedProblems(w, rep)

	ts := embedTargets(rows, e)
	if len(ts) == 0 {
		return
	}
	met := 0
	for _, t := range ts {
		if t.Met {
			met++
		}
	}
	fmt.Fprintf(w, "\nTarget, %s (one worker) ≥ %.1f× %s on %s: %d of %d met\n\n",
		hostLabel(e.Host), e.AtLeast, hostLabel(e.Peer), strings.Join(e.Shapes, ", "), met, len(ts))
	fmt.Fprintf(w, "| model | N × B | %s | %s | ratio | target ≥ %.1f× |\n|---|--:|--:|--:|--:|---|\n", hostLabel(e.Host), hostLabel(e.Peer), e.AtLeast)
	for _, t := range ts {
		ours, base, ratio, verdict := "—", "—", "—", "not measured"
		if x, ok := t.Row.By[e.Host]; ok {
			ours = fmt.Sprintf("%.1f", x.EmbeddingsPerSecond)
		}
		if x, ok := t.Row.By[e.Peer]; ok {
			base = fmt.Sprintf("%.1f", x.EmbeddingsPerSecond)
		}
		if t.Measurable {
			ratio, verdict = fmt.Sprintf("%.2f×", t.Ratio), "missed"
			if t.Met {
				verdict = "met"
			}
		}
		fmt.Fprintf(w, "| %s | %d × %d | %s | %s | %s | %s |\n", t.Row.label(), t.Row.Tokens, t.Row.Batch, ours, base, ratio, verdict)
	}
}

// loadRange is the lowest and highest 1-minute load average at the start
// of the row's runs.
func loadRange(r embedRow) string {
	lo, hi := 0.0, 0.0
	first := true
	for _, x := range r.By {
		if first || x.LoadAverage1m < lo {
			lo = x.LoadAverage1m
		}
		if first || x.LoadAverage1m > hi {
			hi = x.LoadAverage1m
		}
		first = false
	}
	if lo == hi {
		return fmt.Sprintf("%.1f", lo)
	}
	return fmt.Sprintf("%.1f–%.1f", lo, hi)
}

// printEmbedProblems lists the hosts that did not run and the runs that
// failed, once per host, model and error.
func printEmbedProblems(w io.Writer, rep Report) {
	var lines []string
	for _, h := range rep.Hosts {
		if h.Skipped != "" {
			lines = append(lines, fmt.Sprintf("%s: not run: %s", h.Name, h.Skipped))
		}
	}
	for _, r := range rep.Embeds {
		if r.Error == "" {
			continue
		}
		l := fmt.Sprintf("%s on %s: %s", r.Model, r.Host, oneLine(r.Error))
		if !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	}
}
