//go:build !js

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/wasmlm/wasmlm/internal/headless"
)

// The worker's process in Chromium: a page's Web Workers (ours, and
// wllama's) run in the page's renderer process, so the memory a model load
// costs a tab is that process's resident memory. Each browser run opens a
// tab of its own, waits until the renderers of the tabs before it have
// given their memory back, resets every Chromium process's peak (Linux's
// clear_refs 5) and, once the model has loaded, generated and been
// unloaded, reads the largest renderer's peak (VmHWM): the tab's. The
// browser's other processes (the browser process, the GPU and utility
// processes) are read too: what a page keeps outside its own process shows
// there.
//
// Resident memory (VmRSS, VmHWM) counts the pages of Chromium's code that
// its processes share, about 90 MiB of a blank page's 115; the waits go by each
// process's own memory (RssAnon) instead.

// idleRendererAnon is how much memory of their own the renderers may hold
// between them before a load: a blank page's renderer and the spare ones
// take 15–30 MiB each, an earlier model's would take hundreds.
const idleRendererAnon = 256 << 20

// returnedSlack is how much more memory of its own the tab's renderer may
// keep after the unload than before the load, for it to count as given
// back.
const returnedSlack = 64 << 20

// settleTimeout bounds the waits for Chromium to give memory back: a closed
// tab's renderer exiting, an unloaded worker's memory being freed.
const settleTimeout = 30 * time.Second

// processSource is Result.ProcessPeakRSSSource for the browser hosts.
const processSource = "the peak resident memory (VmHWM) of the renderer process of the run's tab, which runs the page and its Web Workers, reset before the load"

// kvBytes is the bytes of one element of a KV cache of type t (f32 or f16).
func kvBytes(t string) int64 {
	if t == "f16" {
		return 2
	}
	return 4
}

// processProbe measures one run's renderer process.
type processProbe struct {
	before    map[int]headless.Renderer // each renderer before the load, by PID
	total     uint64                    // the renderers' RSS before the load, added
	anon      uint64                    // and their RssAnon
	err       error                     // why nothing could be measured
	waitedFor time.Duration
}

// startProbe waits (up to settleTimeout) until the browser's renderers
// hold no more than idleRendererAnon of their own between them — what
// earlier runs loaded has been given back — then resets every process's
// peak. ctx is the run's tab, on its page before the load.
func startProbe(ctx context.Context) *processProbe {
	p := &processProbe{before: map[int]headless.Renderer{}}
	start := time.Now()
	for {
		rs, err := headless.Renderers(ctx)
		if err != nil {
			p.err = err
			return p
		}
		clear(p.before)
		p.total, p.anon = 0, 0
		for _, r := range rs {
			p.before[r.PID] = r
			p.total += r.RSS
			p.anon += r.Anon
		}
		if p.anon <= idleRendererAnon || time.Since(start) > settleTimeout || ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	p.waitedFor = time.Since(start)
	p.err = headless.ResetPeaks(ctx)
	return p
}

// finish fills r's process fields: the peak of the renderer that peaked
// highest (the tab's: it ran the model), its resident memory before the
// load and after the unload (waiting up to settleTimeout for its own
// memory to fall back to within returnedSlack of where it was), and the
// largest peak of the browser's other processes.
func (p *processProbe) finish(ctx context.Context, r *Result) {
	if p.err != nil {
		r.ProcessPeakRSSSource = "not measured: " + p.err.Error()
		return
	}
	ps, err := headless.Processes(ctx)
	if err != nil {
		r.ProcessPeakRSSSource = "not measured: " + err.Error()
		return
	}
	var tab headless.Process
	for _, x := range ps {
		switch {
		case x.Type == "renderer" && x.PeakRSS > tab.PeakRSS:
			tab = x
		case x.Type != "renderer" && x.PeakRSS > r.OtherProcessPeakRSSBytes:
			r.OtherProcessPeakRSSBytes, r.OtherProcess = x.PeakRSS, x.Type
		}
	}
	if tab.PID == 0 {
		r.ProcessPeakRSSSource = "not measured: no renderer process"
		return
	}
	r.ProcessPeakRSSBytes, r.ProcessPeakRSSSource = tab.PeakRSS, processSource
	before := p.before[tab.PID]
	r.ProcessRSSBeforeLoadBytes, r.OtherRenderersRSSBytes = before.RSS, p.total-before.RSS
	after := tab.Renderer
	for start := time.Now(); after.Anon > before.Anon+returnedSlack && time.Since(start) < settleTimeout && ctx.Err() == nil; {
		time.Sleep(250 * time.Millisecond)
		rs, err := headless.Renderers(ctx)
		if err != nil {
			break
		}
		after = headless.Renderer{} // the process may have ended
		for _, x := range rs {
			if x.PID == tab.PID {
				after = x
			}
		}
	}
	r.ProcessRSSAfterUnloadBytes = after.RSS
	if p.waitedFor > settleTimeout {
		r.ProcessPeakRSSSource += fmt.Sprintf("; the renderers still held %s MiB of their own after %.0f s", mib(p.anon), p.waitedFor.Seconds())
	}
}

// memoryHosts are the columns of the memory table: ours in Chromium (the
// host the memory target is about), wllama in the same Chromium, and ours
// natively.
func memoryHosts() []string { return []string{oursHost, "wllama-1t", "native"} }

// bound is the most the worker's process may hold for r's model: its
// factor × the file + the KV cache + its margin.
func (m MemoryTarget) bound(r Result) float64 {
	return m.FileFactor*float64(r.FileSize) + float64(r.KVCacheBytes) + m.PlusBytes
}

// mb is n bytes in decimal megabytes, as the memory target counts them:
// "1,140 MB".
func mb(n float64) string {
	s := fmt.Sprintf("%.0f", n/1e6)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " MB"
}

// memoryRow is one model of the memory table.
type memoryRow struct {
	Shape, Type string
	By          map[string]Result // host → its result (errors included)
}

// memoryRows groups the short prompt's results of heavyShapes (the 1.1B
// and 3B shapes) on memoryHosts by model, in the report's order.
func memoryRows(rep Report) []memoryRow {
	var rows []memoryRow
	for _, r := range shortPrompt(rep) {
		if !slices.Contains(heavyShapes(), r.Shape) || !slices.Contains(memoryHosts(), r.Host) {
			continue
		}
		i := slices.IndexFunc(rows, func(x memoryRow) bool { return x.Shape == r.Shape && x.Type == r.TensorType })
		if i < 0 {
			rows, i = append(rows, memoryRow{Shape: r.Shape, Type: r.TensorType, By: map[string]Result{}}), len(rows)
		}
		rows[i].By[r.Host] = r
	}
	return slices.DeleteFunc(rows, func(x memoryRow) bool { // a row without a browser host is the speed benchmark's
		_, ours := x.By[oursHost]
		_, peer := x.By["wllama-1t"]
		return !ours && !peer
	})
}

// verdict says whether r (ours in Chromium) meets the target.
func (m MemoryTarget) verdict(r Result, ok bool) string {
	switch {
	case !ok || r.Error != "" || r.ProcessPeakRSSBytes == 0:
		return "not measured"
	case float64(r.ProcessPeakRSSBytes) <= m.bound(r):
		return "met"
	}
	return "missed"
}

// printMemory writes the memory table, as docs/benchmarks.md shows it: per
// model, the file, our KV cache, the peak resident memory of the tab's
// process with ours and with wllama (and of wasmlm natively), each against
// the file, and the target m; then what each Chromium run's processes held
// around it, and the errors.
func printMemory(w io.Writer, rep Report, m MemoryTarget) {
	rows := memoryRows(rep)
	if len(rows) == 0 {
		return
	}
	peak := func(r Result, ok bool) string {
		switch {
		case !ok:
			return "—"
		case r.Error != "":
			return "failed"
		case r.ProcessPeakRSSBytes == 0:
			return "not measured"
		}
		return fmt.Sprintf("%s (%.2f×)", mb(float64(r.ProcessPeakRSSBytes)), float64(r.ProcessPeakRSSBytes)/float64(r.FileSize))
	}
	fmt.Fprintf(w, "\nPeak resident memory of the process that ran the model (the target: the worker's process in Chromium ≤ %g × file + KV cache + %s; MB = 10⁶ bytes), %d tokens generated after a %d-token prompt:\n\n",
		m.FileFactor, mb(m.PlusBytes), rep.Settings.MaxTokens, rep.Settings.PromptTokens)
	fmt.Fprintln(w, "| model | file | KV cache | Chromium + SIMD, renderer | its WebAssembly memory | target | | wllama, 1 thread, renderer | native, wasmlm |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|---|--:|--:|")
	var notes []string
	for _, row := range rows {
		ours, okOurs := row.By[oursHost]
		peer, okPeer := row.By["wllama-1t"]
		native, okNative := row.By["native"]
		first := ours
		if !okOurs {
			first = peer
		}
		kv, target, wasm := "—", "—", "—"
		if okOurs && ours.Error == "" {
			kv = fmt.Sprintf("%s (%s, %d positions)", mb(float64(ours.KVCacheBytes)), ours.KVType, ours.ContextLength)
			target = mb(m.bound(ours))
			if ours.PeakMemoryBytes > 0 {
				wasm = mb(float64(ours.PeakMemoryBytes))
			}
		}
		fmt.Fprintf(w, "| %s %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Shape, row.Type, mb(float64(first.FileSize)), kv,
			peak(ours, okOurs), wasm, target, m.verdict(ours, okOurs), peak(peer, okPeer), peak(native, okNative))
		for _, h := range memoryHosts() {
			r, ok := row.By[h]
			switch {
			case !ok:
			case r.Error != "":
				notes = append(notes, fmt.Sprintf("%s on %s %s failed: %s", hostLabel(h), row.Shape, row.Type, oneLine(r.Error)))
			case r.ProcessRSSBeforeLoadBytes > 0:
				note := fmt.Sprintf("%s on %s %s: the tab's renderer held %s before the load and %s after the unload, the other renderers %s; the largest other Chromium process (%s) peaked at %s",
					hostLabel(h), row.Shape, row.Type, mb(float64(r.ProcessRSSBeforeLoadBytes)), mb(float64(r.ProcessRSSAfterUnloadBytes)),
					mb(float64(r.OtherRenderersRSSBytes)), r.OtherProcess, mb(float64(r.OtherProcessPeakRSSBytes)))
				if r.KVType != "" && h != oursHost {
					note += fmt.Sprintf("; its KV cache: %s (%s)", mb(float64(r.KVCacheBytes)), r.KVType)
				}
				if r.CacheStorage != "" {
					note += "; the model cache: " + r.CacheStorage
				}
				notes = append(notes, note)
			}
		}
	}
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintf(w, "- %s.\n", n)
	}
}
