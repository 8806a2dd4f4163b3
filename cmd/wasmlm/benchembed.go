package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// bench -embed: embeddings a second of an embedding model. Each
// spec TOKENSxBATCH embeds BATCH texts of TOKENS tokens each in one
// Session.Embed call, as a host gets them (/v1/embeddings, the page's
// lm.embeddings.create): after warm-up rounds, -rounds measured rounds,
// whose median gives the rate.

// defaultEmbedRounds are -embed's measured rounds when -rounds is not given.
const defaultEmbedRounds = 5

// parseEmbedSpecs reads -embed's list, "32x1,256x16".
func parseEmbedSpecs(list string) ([]modelgen.EmbedSpec, error) {
	specs, err := modelgen.ParseEmbedSpecs(list)
	if err != nil {
		return nil, fmt.Errorf("-embed: %w", err)
	}
	for _, s := range specs {
		if s.Batch > engine.MaxEmbedInputs {
			return nil, fmt.Errorf("-embed: %v: at most %d texts a call", s, engine.MaxEmbedInputs)
		}
	}
	return specs, nil
}

// embedRun is one spec's measurement.
type embedRun struct {
	Tokens int `json:"tokens"` // each text's, [CLS] and [SEP] included
	Batch  int `json:"batch"`  // texts per Embed call
	// WarmupRounds ran before the measured ones (until -warmup had passed).
	WarmupRounds int `json:"warmup_rounds"`
	// Seconds are each measured round's wall time: one Embed call of
	// Batch texts (tokenizing, the passes, pooling, normalising).
	Seconds             []float64 `json:"seconds"`
	MedianSeconds       float64   `json:"median_seconds"`
	EmbeddingsPerSecond float64   `json:"embeddings_per_second"` // Batch / MedianSeconds
}

// benchEmbedModel loads one model and measures each spec on a fresh
// session: texts of modelgen.EmbedTexts (whole words of BERT's
// vocabulary), checked to be the spec's tokens long.
func benchEmbedModel(ctx context.Context, path string, set benchSettings, specs []modelgen.EmbedSpec) (benchResult, error) {
	model, r, reset, err := loadBenchModel(path, set)
	if err != nil {
		return r, err
	}
	for _, sp := range specs {
		session, err := model.NewSession(engine.SessionOptions{ContextLength: set.ctx, Threads: set.threads})
		if err != nil {
			return r, err
		}
		r.ContextLength, r.Threads = session.ContextLength(), session.Threads()
		run, err := benchEmbed(ctx, session, sp, set)
		if err != nil {
			return r, fmt.Errorf("%s, %v: %w", displayPath(path), sp, err)
		}
		r.Embed = append(r.Embed, run)
	}
	r.PeakMemoryBytes, r.PeakMemorySource = peakMemory(reset)
	r.ProcessPeakRSSBytes, _ = procStatus("VmHWM")
	runtime.KeepAlive(model)
	return r, nil
}

// benchEmbed measures one spec on s: rounds to warm up until set.warmup
// has passed (at least one), then set.rounds, each one Embed call.
func benchEmbed(ctx context.Context, s *engine.Session, sp modelgen.EmbedSpec, set benchSettings) (embedRun, error) {
	run := embedRun{Tokens: sp.Tokens, Batch: sp.Batch}
	texts, err := sp.Texts()
	if err != nil {
		return run, err
	}
	round := func() (time.Duration, error) {
		start := time.Now()
		embs, err := s.Embed(ctx, texts, engine.EmbedOptions{})
		elapsed := time.Since(start)
		if err != nil {
			return 0, err
		}
		for i, e := range embs {
			if e.Tokens != sp.Tokens {
				return 0, fmt.Errorf("text %d is %d tokens, not %d: the model's tokenizer is not BERT's WordPiece", i, e.Tokens, sp.Tokens)
			}
		}
		return elapsed, nil
	}
	for start := time.Now(); run.WarmupRounds == 0 || time.Since(start) < set.warmup; run.WarmupRounds++ {
		if _, err := round(); err != nil {
			return run, err
		}
	}
	for range set.rounds {
		d, err := round()
		if err != nil {
			return run, err
		}
		run.Seconds = append(run.Seconds, d.Seconds())
	}
	run.EmbeddingsPerSecond, run.MedianSeconds = sp.Rate(run.Seconds)
	return run, nil
}
