// Package golden holds the reference outputs of llama2.c that the tests of
// several packages compare with, once, so that no package keeps its own
// copy. Only tests import it (the files are embedded in their binaries, and
// in no product's).
//
// runc_stories260K.json is llama2.c run.c's greedy output for the default
// model (stories260K, tok512 vocabulary): run.c built with gcc -O3, run as
// `run stories260K.bin -z tok512.bin -t 0.0 -n 200 [-i PROMPT]` for the
// prompts "", "Once upon a time", "The little dog" and "Lily and Tom went",
// and the 512 logits after "Once upon a time". runc_tokenizer.json is
// run.c's encode() of 40 strings, with and without BOS, for tok512.bin and
// Llama 2's tokenizer.bin. Both come from the project's shared reference set
// (its golden/README.md says how they were made).
package golden

import (
	_ "embed"
	"encoding/json"
	"testing"
)

//go:embed runc_stories260K.json
var runcStories260K []byte

//go:embed runc_tokenizer.json
var runcTokenizer []byte

// Runc is run.c's greedy output for stories260K.
type Runc struct {
	Steps int       `json:"steps"` // positions run.c ran (200)
	Runs  []RuncRun `json:"runs"`  // one per prompt
	// LogitsAfterPrompt are the logits at the last position of one prompt.
	LogitsAfterPrompt struct {
		Prompt    string      `json:"prompt"`
		PromptIDs []int       `json:"prompt_ids"`
		Logits    []float32   `json:"logits"`
		Top10     [][]float64 `json:"top10"` // [id, logit]
	} `json:"logits_after_prompt"`
}

// RuncRun is one prompt's greedy generation.
type RuncRun struct {
	Prompt       string `json:"prompt"`
	PromptIDs    []int  `json:"prompt_ids"`    // run.c's encoding, BOS first
	GeneratedIDs []int  `json:"generated_ids"` // the tokens after the prompt
	IDs          []int  `json:"ids"`           // PromptIDs then GeneratedIDs
	StoppedAtBOS bool   `json:"stopped_at_bos"`
	Text         string `json:"text"` // run.c's stdout: the prompt and the generated text
}

// RuncStories260K is run.c's greedy output for stories260K; a file that
// does not parse, or holds no run, fails t.
func RuncStories260K(t testing.TB) Runc {
	t.Helper()
	var g Runc
	if err := json.Unmarshal(runcStories260K, &g); err != nil {
		t.Fatalf("golden: runc_stories260K.json: %v", err)
	}
	if len(g.Runs) == 0 {
		t.Fatalf("golden: runc_stories260K.json has no runs")
	}
	return g
}

// TokenizerCase is one string and run.c's encodings of it.
type TokenizerCase struct {
	Text  string `json:"text"`
	BOS   []int  `json:"bos"`    // with BOS (id 1) first
	NoBOS []int  `json:"no_bos"` // without
}

// RuncTokenizer is run.c's encode() of the same strings with two vocabularies.
type RuncTokenizer struct {
	Tok512 []TokenizerCase `json:"tok512"`        // tok512.bin (stories260K)
	Tok32k []TokenizerCase `json:"tokenizer_32k"` // tokenizer.bin (Llama 2)
}

// RuncTokenizerCases is run.c's encodings; a file that does not parse, or
// whose vocabularies encode different strings, fails t.
func RuncTokenizerCases(t testing.TB) RuncTokenizer {
	t.Helper()
	var g RuncTokenizer
	if err := json.Unmarshal(runcTokenizer, &g); err != nil {
		t.Fatalf("golden: runc_tokenizer.json: %v", err)
	}
	if len(g.Tok512) == 0 || len(g.Tok512) != len(g.Tok32k) {
		t.Fatalf("golden: runc_tokenizer.json: %d and %d strings", len(g.Tok512), len(g.Tok32k))
	}
	return g
}
