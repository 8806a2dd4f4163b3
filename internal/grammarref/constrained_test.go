//go:build !js

package grammarref_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/grammar/jsonschema"
	"github.com/wasmlm/wasmlm/internal/grammarref"
	"github.com/wasmlm/wasmlm/internal/longtest"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/sampling"
)

// corpusSchema is one schema of grammar/jsonschema's corpus.
type corpusSchema struct {
	name     string
	schema   json.RawMessage
	llamaCpp string // llama.cpp's own grammar for it; "" where its converter fails
}

func loadCorpus(t *testing.T) []corpusSchema {
	t.Helper()
	files, err := filepath.Glob("../../grammar/jsonschema/testdata/corpus/*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 30)
	var out []corpusSchema
	for _, f := range files {
		schema, err := os.ReadFile(f)
		require.NoError(t, err)
		// llama.cpp's own grammar, where its converter takes the schema (a
		// .llamacpp.err file says why not).
		own, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".llamacpp.gbnf")
		if err != nil {
			_, errFile := os.Stat(strings.TrimSuffix(f, ".json") + ".llamacpp.err")
			require.NoError(t, errFile, "%s has neither llama.cpp's grammar nor its error", f)
		}
		out = append(out, corpusSchema{strings.TrimSuffix(filepath.Base(f), ".json"), schema, string(own)})
	}
	return out
}

// constrainedModel is a model the corpus is sampled from, with how many
// seeds and tokens: in make test two seeds of stories260K and one of each
// other model, in make test-long (WASMLM_LONG=1) six and two.
type constrainedModel struct {
	name      string
	model     *engine.Model
	seeds     int
	maxTokens int
}

func constrainedModels(t *testing.T) []constrainedModel {
	t.Helper()
	def, err := engine.LoadGGUF(models.Default())
	require.NoError(t, err)
	seeds, otherSeeds := 2, 1
	if longtest.Enabled() {
		seeds, otherSeeds = 6, 2
	}
	out := []constrainedModel{{"stories260K", def, seeds, 400}}
	for _, tc := range []struct {
		name  string
		shape modelgen.Shape
	}{
		// The benchmark's stories15M shape, and a Qwen-sized vocabulary on
		// a small body: random weights, a synthetic vocabulary.
		{"stories15M-shape", modelgen.Stories15M()},
		{"vocab151936", modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 151936, ContextLength: 512}},
	} {
		data, err := modelgen.Build(modelgen.Spec{Shape: tc.shape, Type: tensor.Q8_0, Seed: 16, Fast: true})
		require.NoError(t, err, tc.name)
		m, err := engine.LoadGGUF(data)
		require.NoError(t, err, tc.name)
		out = append(out, constrainedModel{tc.name, m, otherSeeds, tc.shape.ContextLength})
	}
	return out
}

// TestConstrainedOutputsValidate samples every schema of the corpus at
// temperature 1 with one or more seeds (see constrainedModel) from models that cannot write JSON by
// themselves, and has ajv validate every output against its schema and
// llama.cpp match it against our grammar and against its own.
func TestConstrainedOutputsValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("samples the whole corpus")
	}
	runner := grammarref.Need(t)
	corpus := loadCorpus(t)
	var schemaJobs []grammarref.SchemaJob
	var grammarJobs []grammarref.GrammarJob
	type origin struct{ schema, model string }
	var origins []origin
	for _, cm := range constrainedModels(t) {
		s, err := cm.model.NewSession(engine.SessionOptions{})
		require.NoError(t, err)
		gs := policy.NewGrammars(cm.model)
		for _, cs := range corpus {
			g, err := gs.FormatGrammar(policy.ResponseFormat{Type: policy.FormatJSONSchema, Schema: cs.schema})
			require.NoError(t, err, cs.name)
			var texts []string
			for seed := range uint64(cm.seeds) {
				opts := engine.GenerateOptions{MaxTokens: cm.maxTokens / 2, Constraint: g,
					Sampling: sampling.Params{Temperature: 1, Seed: seed}}
				res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
				require.NoError(t, err, "%s %s seed %d", cm.name, cs.name, seed)
				texts = append(texts, res.Text)
			}
			ours, err := jsonschema.ToGBNF(cs.schema)
			require.NoError(t, err)
			schemaJobs = append(schemaJobs, grammarref.SchemaJob{Schema: cs.schema, Texts: texts})
			theirs := cs.llamaCpp
			if theirs == "" {
				theirs = ours // nothing of llama.cpp's to compare with
			}
			grammarJobs = append(grammarJobs, grammarref.GrammarJob{Grammar: ours, Texts: texts},
				grammarref.GrammarJob{Grammar: theirs, Texts: texts})
			origins = append(origins, origin{cs.name, cm.name})
		}
	}
	gr, sr, err := runner.Run(grammarJobs, schemaJobs)
	require.NoError(t, err)
	outputs, rejectedByTheirs := 0, 0
	differs := llamaDiffers(t)
	for i, o := range origins {
		require.Empty(t, sr[i].Error, o.schema)
		require.Empty(t, gr[2*i].Error, o.schema)
		if gr[2*i+1].Error != "" {
			require.Contains(t, differs, o.schema, "llama.cpp refuses its own grammar: %s", gr[2*i+1].Error)
			gr[2*i+1].Accepts = make([]bool, len(schemaJobs[i].Texts))
		}
		for j, text := range schemaJobs[i].Texts {
			outputs++
			require.True(t, sr[i].Valid[j], "%s from %s: ajv rejects %q", o.schema, o.model, text)
			require.True(t, gr[2*i].Accepts[j], "%s from %s: llama.cpp rejects %q under our grammar", o.schema, o.model, text)
			if !gr[2*i+1].Accepts[j] {
				// Where llama.cpp's own grammar differs from ajv's verdicts
				// (llama.cpp's converter bugs, listed with the corpus),
				// ajv has the last word.
				require.Contains(t, differs, o.schema, "%s from %s: llama.cpp rejects %q under its own grammar", o.schema, o.model, text)
				rejectedByTheirs++
			}
		}
	}
	t.Logf("%d outputs of %d schemas from %d models, all valid; llama.cpp's own grammars (where its converter has a known bug) reject %d", outputs, len(corpus), len(origins)/len(corpus), rejectedByTheirs)
}

// llamaDiffers are the corpus schemas whose llama.cpp grammar gives other
// verdicts than ajv (grammar/jsonschema/testdata/llamacpp-differs.json,
// which grammar/jsonschema's differential test explains one by one).
func llamaDiffers(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../grammar/jsonschema/testdata/llamacpp-differs.json")
	require.NoError(t, err)
	var m map[string]string
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestLlamaCppSamplesMatchOurGrammar is the other direction: llama.cpp
// samples stories260K under our grammar of each corpus schema, at
// temperature 1; every completion that ended by itself is a whole match of
// our matcher and valid for ajv, and every one cut at its token limit is a
// text our matcher can still continue.
func TestLlamaCppSamplesMatchOurGrammar(t *testing.T) {
	if testing.Short() {
		t.Skip("samples the whole corpus with llama.cpp")
	}
	runner := grammarref.Need(t)
	model, err := filepath.Abs("../../models/stories260K-F16.gguf")
	require.NoError(t, err)
	corpus := loadCorpus(t)
	var jobs []grammarref.SampleJob
	for _, cs := range corpus {
		ours, err := jsonschema.ToGBNF(cs.schema)
		require.NoError(t, err)
		jobs = append(jobs, grammarref.SampleJob{Grammar: ours, Prompt: "Once upon a time",
			Seeds: []uint32{1, 2, 3}, MaxTokens: 300, Temperature: 1})
	}
	results, err := runner.Sample(model, jobs)
	require.NoError(t, err)
	def, err := engine.LoadGGUF(models.Default())
	require.NoError(t, err)
	gs := policy.NewGrammars(def)
	var schemaJobs []grammarref.SchemaJob
	ended, cut := 0, 0
	for i, cs := range corpus {
		c, err := gs.FormatGrammar(policy.ResponseFormat{Type: policy.FormatJSONSchema, Schema: cs.schema})
		require.NoError(t, err)
		g := c.(*policy.Grammar)
		whole := []string{}
		for j, text := range results[i].Texts {
			if results[i].Ended[j] {
				ended++
				require.True(t, g.Accepts(text), "%s seed %d: our grammar rejects llama.cpp's %q", cs.name, jobs[i].Seeds[j], text)
				whole = append(whole, text)
			} else {
				cut++
				require.True(t, g.Continues(text), "%s seed %d: our grammar cannot continue llama.cpp's %q", cs.name, jobs[i].Seeds[j], text)
			}
		}
		schemaJobs = append(schemaJobs, grammarref.SchemaJob{Schema: cs.schema, Texts: whole})
	}
	_, sr, err := runner.Run(nil, schemaJobs)
	require.NoError(t, err)
	for i, r := range sr {
		require.Empty(t, r.Error)
		for j, ok := range r.Valid {
			require.True(t, ok, "%s: ajv rejects llama.cpp's %q", corpus[i].name, schemaJobs[i].Texts[j])
		}
	}
	t.Logf("llama.cpp sampled %d completions that ended and %d cut at 300 tokens; our matcher agrees with all", ended, cut)
}
