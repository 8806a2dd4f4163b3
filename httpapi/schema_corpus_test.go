//go:build !js

package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/grammarref"
)

// TestJSONSchemaCorpus: for every schema of grammar/jsonschema's corpus
// that the converter takes, replies sampled at temperature 1 under
// response_format json_schema are valid for it, as ajv judges.
func TestJSONSchemaCorpus(t *testing.T) {
	ref := grammarref.Need(t)
	h := newHandler(t, Options{})
	files, err := filepath.Glob("../grammar/jsonschema/testdata/corpus/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var jobs []grammarref.SchemaJob
	var names []string
	for _, f := range files {
		schema, err := os.ReadFile(f)
		require.NoError(t, err)
		job := grammarref.SchemaJob{Schema: schema}
		for seed := 1; seed <= 3; seed++ {
			body := mustJSON(t, map[string]any{
				"messages":        []map[string]string{{"role": "user", "content": "Once upon a time"}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "corpus", "schema": json.RawMessage(schema)}},
				"temperature":     1, "seed": seed, "max_tokens": 300,
			})
			w := do(h, "POST", "/v1/chat/completions", body)
			if w.Code == http.StatusBadRequest {
				e := apiErrorOf(t, w.Body.Bytes())
				assertNullable(t, "response_format.json_schema.schema", e.Param, filepath.Base(f))
				t.Logf("%s: refused: %s", filepath.Base(f), e.Message)
				break
			}
			c := decodeCompletion(t, w) // "stop", a whole match steered to end at the limit if need be
			job.Texts = append(job.Texts, c.text(t))
		}
		if len(job.Texts) > 0 {
			jobs, names = append(jobs, job), append(names, filepath.Base(f))
		}
	}
	require.NotEmpty(t, jobs)
	_, results, err := ref.Run(nil, jobs)
	require.NoError(t, err)
	for i, r := range results {
		require.Empty(t, r.Error, names[i])
		for j, ok := range r.Valid {
			assert.True(t, ok, "%s: ajv refuses %q", names[i], jobs[i].Texts[j])
		}
	}
	t.Logf("%d schemas of %d, %d replies each, valid", len(jobs), len(files), len(jobs[0].Texts))
}
