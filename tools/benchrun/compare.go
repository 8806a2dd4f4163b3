//go:build !js

package main

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// runChange is how one host's decode speed changed between two runs of
// the benchmark: the geometric mean over the models both ran, and the
// smallest and largest ratio of a single model.
type runChange struct {
	Host               string
	Models             int
	Before, After      float64 // geometric mean decode tokens/s
	Ratio              float64 // After / Before
	MinRatio, MaxRatio float64
}

// compareRuns compares the decode speeds of two runs (after their short
// prompt), host by host in the order the later run lists them.
func compareRuns(before, after Report) []runChange {
	speed := func(rep Report) map[[2]string]float64 {
		m := map[[2]string]float64{}
		for _, r := range shortPrompt(rep) {
			if r.Error == "" && r.DecodeTokensPerSecond > 0 {
				m[[2]string{r.Host, r.Model}] = r.DecodeTokensPerSecond
			}
		}
		return m
	}
	b, a := speed(before), speed(after)
	var hosts []string
	for _, r := range after.Results {
		if !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	var out []runChange
	for _, h := range hosts {
		c := runChange{Host: h, MinRatio: math.Inf(1), MaxRatio: math.Inf(-1)}
		var logB, logA float64
		for _, r := range shortPrompt(after) {
			key := [2]string{h, r.Model}
			vb, okB := b[key]
			va, okA := a[key]
			if r.Host != h || !okB || !okA {
				continue
			}
			c.Models++
			logB += math.Log(vb)
			logA += math.Log(va)
			c.MinRatio, c.MaxRatio = min(c.MinRatio, va/vb), max(c.MaxRatio, va/vb)
		}
		if c.Models == 0 {
			continue
		}
		c.Before, c.After = math.Exp(logB/float64(c.Models)), math.Exp(logA/float64(c.Models))
		c.Ratio = c.After / c.Before
		out = append(out, c)
	}
	return out
}

// printComparison writes the runChange as a Markdown table.
func printComparison(w io.Writer, rows []runChange) {
	fmt.Fprintln(w, "| host | models | before, tok/s | after, tok/s | after / before | per model |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|")
	for _, c := range rows {
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.2f× | %.2f–%.2f× |\n", c.Host, c.Models, c.Before, c.After, c.Ratio, c.MinRatio, c.MaxRatio)
	}
}
