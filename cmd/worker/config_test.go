package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/httpapi"
)

// env is a worker environment for readConfig: unset names read as "".
type env map[string]string

func (e env) getenv(name string) (string, error) {
	if v, ok := e[name]; ok && v == "<binding>" {
		return "", errors.New(name + " is a binding, not text")
	}
	return e[name], nil
}

// TestReadConfig: the secret's keys are split on commas, trimmed, empty
// entries skipped; the limits are whole numbers; what is unset keeps the
// worker as it was (open, unlimited, the context's max_tokens, the
// default cap on an embeddings request's tokens, a 60 s binding period).
func TestReadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  env
		want edgeConfig
	}{
		{"nothing set", env{}, edgeConfig{period: time.Minute, maxEmbed: httpapi.DefaultMaxEmbedTokens}},
		{"blank secret", env{envKeys: "  "}, edgeConfig{period: time.Minute, maxEmbed: httpapi.DefaultMaxEmbedTokens}},
		{"one key", env{envKeys: "sk-one"}, edgeConfig{keys: []string{"sk-one"}, period: time.Minute, maxEmbed: httpapi.DefaultMaxEmbedTokens}},
		{
			"keys trimmed, empty entries skipped",
			env{envKeys: " sk-one ,sk-two,, ,sk-three,\n"},
			edgeConfig{keys: []string{"sk-one", "sk-two", "sk-three"}, period: time.Minute, maxEmbed: httpapi.DefaultMaxEmbedTokens},
		},
		{
			"limits",
			env{envRateLimit: "60", envTokenLimit: " 20000 ", envMaxTokens: "64", envMaxEmbed: "4096", envLimitPeriod: "10"},
			edgeConfig{limits: httpapi.Limits{RequestsPerMinute: 60, TokensPerMinute: 20000}, maxTokens: 64, maxEmbed: 4096, period: 10 * time.Second},
		},
		{"zero is no limit", env{envRateLimit: "0", envTokenLimit: "0", envMaxTokens: "0", envMaxEmbed: "0"}, edgeConfig{period: time.Minute}},
		{"context shift", env{envShift: " true "}, edgeConfig{period: time.Minute, maxEmbed: httpapi.DefaultMaxEmbedTokens, shift: true}},
		{"no context shift", env{envShift: "false"}, edgeConfig{period: time.Minute, maxEmbed: httpapi.DefaultMaxEmbedTokens}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readConfig(tc.env.getenv)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestReadConfigErrors: a malformed secret or variable is an error that
// names it (and never quotes the secret), so the worker can refuse to serve
// rather than serve open or unlimited.
func TestReadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  env
		want []string // in the message
	}{
		{"a key with a space", env{envKeys: "sk-good, sk bad"}, []string{"secret WASMLM_API_KEYS is malformed", "key 2 "}},
		{"a key outside ASCII", env{envKeys: "sk-ünïcode"}, []string{"WASMLM_API_KEYS", "key 1 "}},
		{"commas only", env{envKeys: " , ,"}, []string{"WASMLM_API_KEYS", "no key"}},
		{"the secret not text", env{envKeys: "<binding>"}, []string{"WASMLM_API_KEYS is a binding"}},
		{"rate limit not a number", env{envRateLimit: "ten"}, []string{`WASMLM_RATE_LIMIT = "ten"`, "requests per minute"}},
		{"token limit negative", env{envTokenLimit: "-5"}, []string{`WASMLM_TOKEN_LIMIT = "-5"`}},
		{"max tokens a fraction", env{envMaxTokens: "64.5"}, []string{`WASMLM_MAX_TOKENS = "64.5"`}},
		{"context shift not a boolean", env{envShift: "yes"}, []string{`WASMLM_CONTEXT_SHIFT = "yes"`, "true or false"}},
		{"max embed tokens negative", env{envMaxEmbed: "-1"}, []string{`WASMLM_MAX_EMBED_TOKENS = "-1"`, "tokens"}},
		{"a huge limit", env{envRateLimit: "99999999999999999999"}, []string{"WASMLM_RATE_LIMIT"}},
		{"period zero", env{envLimitPeriod: "0"}, []string{"WASMLM_RATE_LIMIT_PERIOD = 0"}},
		{"period not a number", env{envLimitPeriod: "1m"}, []string{`WASMLM_RATE_LIMIT_PERIOD = "1m"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readConfig(tc.env.getenv)
			require.Error(t, err)
			assert.ErrorIs(t, err, errMisconfigured)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "sk-", "the secret is never quoted")
		})
	}
}

// TestMaxTokensFor: WASMLM_MAX_TOKENS is capped at the context the model
// is served with, saying so, unless the context shifts; a model that does
// not generate ignores it.
func TestMaxTokensFor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        edgeConfig
		generates  bool
		want       int
		wantNotice string
	}{
		{"unset", edgeConfig{}, true, 0, ""},
		{"within the context", edgeConfig{maxTokens: 200}, true, 200, ""},
		{"the context", edgeConfig{maxTokens: 512}, true, 512, ""},
		{"beyond the context", edgeConfig{maxTokens: 100000}, true, 512,
			"WASMLM_MAX_TOKENS = 100000 exceeds the context of 512 tokens the model is served with: max_tokens is capped at 512 (WASMLM_CONTEXT_SHIFT=true lets a reply run past the context)"},
		{"beyond, with context shift", edgeConfig{maxTokens: 100000, shift: true}, true, 100000, ""},
		{"an embedding model", edgeConfig{maxTokens: 100000}, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notice := maxTokensFor(tc.cfg, tc.generates, 512)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantNotice, notice)
		})
	}
}
