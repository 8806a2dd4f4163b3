//go:build !js

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Targets are what a mode's results are judged against (bench/targets.json):
// per mode, the hosts compared and the ratio or bound each measure must
// reach. The tables print each target, met or missed.
type Targets struct {
	// Peers: the browser's prompt and decode speed against llama.cpp's
	// (BENCH=peers, and any run whose tables have its hosts).
	Peers RatioTargets `json:"peers"`
	// Native: native prompt and decode speed against llama.cpp's with as
	// many threads (BENCH=native).
	Native RatioTargets `json:"native"`
	// Memory: the peak resident memory of the process that ran the model
	// (BENCH=memory).
	Memory MemoryTarget `json:"memory"`
	// Grammar: what a JSON schema may add to each token (BENCH=grammar).
	Grammar GrammarTarget `json:"grammar"`
	// Embed: embeddings a second against llama.cpp's (BENCH=embed).
	Embed EmbedTarget `json:"embed"`
	// Budget: the peak memory of every run against its model's size, the
	// results table's peak / budget column (BENCH=full, and every mode).
	Budget MemoryBudget `json:"budget"`
}

// MemoryBudget is the most memory a run should take for its model:
// FileFactor × the file + the KV cache.
type MemoryBudget struct {
	FileFactor float64 `json:"file_factor"`
}

// RatioTargets judge our speed against a peer's on the same rows of the
// side-by-side tables: each Ratio, for each pair of hosts in Compare.
type RatioTargets struct {
	About     string      `json:"about"`      // the hosts compared, as the heading says it
	OursLabel string      `json:"ours_label"` // the targets table's column of our speed
	PeerLabel string      `json:"peer_label"` // and of the peer's
	Compare   []HostPair  `json:"compare"`    // ours against the peer, in the tables' order
	Ratios    []RateRatio `json:"ratios"`
	// OmitUnmeasured leaves out the rows a pair did not run (the mode's
	// plan skips them) rather than list them as not measured.
	OmitUnmeasured bool `json:"omit_unmeasured"`
}

// HostPair is one of our hosts against a peer's, Label naming the pair in
// a target's name ("1 thread"), or nothing when there is one pair.
type HostPair struct {
	Ours  string `json:"ours"`
	Peer  string `json:"peer"`
	Label string `json:"label"`
}

// RateRatio asks ours ≥ AtLeast × the peer's Rate ("prompt" or "decode"
// tokens/s) on the models of Shapes in Types, for each pair of its own
// Compare, or of its RatioTargets' when it has none.
type RateRatio struct {
	Rate    string     `json:"rate"`
	AtLeast float64    `json:"at_least"`
	Shapes  []string   `json:"shapes"`
	Types   []string   `json:"types"`
	Compare []HostPair `json:"compare,omitempty"`
}

// pairs are the hosts x compares: its own, or else those of the targets it is in.
func (x RateRatio) pairs(r RatioTargets) []HostPair {
	if len(x.Compare) > 0 {
		return x.Compare
	}
	return r.Compare
}

// MemoryTarget bounds the peak resident memory of the process that ran our
// page's worker in Chromium by FileFactor × the file + the KV cache +
// PlusBytes.
type MemoryTarget struct {
	FileFactor float64 `json:"file_factor"`
	PlusBytes  float64 `json:"plus_bytes"`
}

// GrammarTarget bounds what a JSON schema adds to a token on Host: at most
// MaxDecodeShare of the decode time on the 1.1B shape, at most
// MaxMSPerToken milliseconds on a 150k-token vocabulary.
type GrammarTarget struct {
	Host           string  `json:"host"`
	MaxDecodeShare float64 `json:"max_decode_share"`
	MaxMSPerToken  float64 `json:"max_ms_per_token"`
}

// EmbedTarget asks Host's embeddings/s ≥ AtLeast × Peer's on every row of
// Shapes.
type EmbedTarget struct {
	Host    string   `json:"host"`
	Peer    string   `json:"peer"`
	Shapes  []string `json:"shapes"`
	AtLeast float64  `json:"at_least"`
}

// readTargets reads and checks a targets file.
func readTargets(path string) (Targets, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Targets{}, err
	}
	var t Targets
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Targets{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := t.check(); err != nil {
		return Targets{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// check requires every host to be one the benchmark runs, every rate one it
// measures and every bound positive.
func (t Targets) check() error {
	host := func(field, h string) error {
		if !slices.Contains(allHosts(), h) {
			return fmt.Errorf("%s: unknown host %q", field, h)
		}
		return nil
	}
	pairs := func(name string, ps []HostPair) error {
		for _, p := range ps {
			if err := host(name+".compare.ours", p.Ours); err != nil {
				return err
			}
			if err := host(name+".compare.peer", p.Peer); err != nil {
				return err
			}
		}
		return nil
	}
	for _, named := range []struct {
		name string
		r    RatioTargets
	}{{"peers", t.Peers}, {"native", t.Native}} { // in this order: the first error is always the same
		name, r := named.name, named.r
		if len(r.Ratios) == 0 || r.About == "" || r.OursLabel == "" || r.PeerLabel == "" {
			return fmt.Errorf("%s: needs about, ours_label, peer_label and ratios", name)
		}
		if err := pairs(name, r.Compare); err != nil {
			return err
		}
		for _, x := range r.Ratios {
			if err := pairs(name, x.Compare); err != nil {
				return err
			}
			if x.Rate != "prompt" && x.Rate != "decode" {
				return fmt.Errorf("%s.ratios.rate: %q, want prompt or decode", name, x.Rate)
			}
			if x.AtLeast <= 0 || len(x.Shapes) == 0 || len(x.Types) == 0 {
				return fmt.Errorf("%s.ratios: at_least, shapes and types are required", name)
			}
			if len(x.pairs(r)) == 0 {
				return fmt.Errorf("%s.ratios: a compare is required, of the ratio's own or of %s", name, name)
			}
		}
	}
	for field, h := range map[string]string{"grammar.host": t.Grammar.Host, "embed.host": t.Embed.Host, "embed.peer": t.Embed.Peer} {
		if err := host(field, h); err != nil {
			return err
		}
	}
	switch {
	case t.Budget.FileFactor <= 0:
		return fmt.Errorf("budget: file_factor must be positive")
	case t.Memory.FileFactor <= 0 || t.Memory.PlusBytes < 0:
		return fmt.Errorf("memory: file_factor must be positive, plus_bytes not negative")
	case t.Grammar.MaxDecodeShare <= 0 || t.Grammar.MaxMSPerToken <= 0:
		return fmt.Errorf("grammar: max_decode_share and max_ms_per_token must be positive")
	case t.Embed.AtLeast <= 0 || len(t.Embed.Shapes) == 0:
		return fmt.Errorf("embed: at_least and shapes are required")
	}
	return nil
}

// judge measures each of r's ratios on rows, for each pair of hosts.
func (r RatioTargets) judge(rows []row) []target {
	var out []target
	for _, x := range r.Ratios {
		rate := func(v Result) float64 { return v.PrefillTokensPerSecond }
		if x.Rate == "decode" {
			rate = func(v Result) float64 { return v.DecodeTokensPerSecond }
		}
		for _, p := range x.pairs(r) {
			what := x.Rate
			if p.Label != "" {
				what += ", " + p.Label
			}
			for _, row := range rows {
				if !slices.Contains(x.Types, row.Type) || !slices.Contains(x.Shapes, row.Shape) {
					continue
				}
				t := target{What: what, Shape: row.Shape, Type: row.Type, Prompt: row.Prompt, Needed: x.AtLeast}
				if t.judge(row, p.Ours, p.Peer, rate); t.Verdict != "not measured" || !r.OmitUnmeasured {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// hostsIn says whether one of r's own hosts is a column of the tables.
func (r RatioTargets) hostsIn(cols []string) bool {
	for _, x := range r.Ratios {
		for _, p := range x.pairs(r) {
			if slices.Contains(cols, p.Ours) {
				return true
			}
		}
	}
	return false
}
