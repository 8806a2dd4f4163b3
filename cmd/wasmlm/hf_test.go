package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hfSourceCase is a row of testdata/hf_sources.json, the table the
// JavaScript library's hf: resolution is held to as well
// (tests/e2e/browser_hf_test.go): a shorthand, the endpoint (default
// https://huggingface.co), and the URL it resolves to or a phrase of the
// error it is.
type hfSourceCase struct {
	Source   string `json:"source"`
	Endpoint string `json:"endpoint"`
	URL      string `json:"url"`
	Error    string `json:"error"`
}

func TestHFSources(t *testing.T) {
	b, err := os.ReadFile("testdata/hf_sources.json")
	require.NoError(t, err)
	var cases []hfSourceCase
	require.NoError(t, json.Unmarshal(b, &cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.Source, func(t *testing.T) {
			f, err := parseHF(c.Source)
			if c.Error != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.Error)
				assert.Contains(t, err.Error(), "hf:owner/repo/file.gguf", "the error shows the form")
				return
			}
			require.NoError(t, err)
			endpoint := c.Endpoint
			if endpoint == "" {
				endpoint = defaultHFEndpoint
			}
			assert.Equal(t, c.URL, f.url(endpoint))
		})
	}
	assert.False(t, isHF("https://huggingface.co/a/b/resolve/main/c.gguf"))
	assert.False(t, isHF("models/hf.gguf"))
}
