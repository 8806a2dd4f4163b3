package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
)

// runCLI runs one command line and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestGenerateGreedyIsLlama2C(t *testing.T) {
	g := golden.RuncStories260K(t)
	for _, r := range g.Runs {
		n := strconv.Itoa(g.Steps + 1 - len(r.PromptIDs))
		code, out, errOut := runCLI(t, "generate", "-p", r.Prompt, "-temp", "0", "-n", n, "-json")
		require.Equal(t, exitOK, code, errOut)
		var res generateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.Equal(t, r.GeneratedIDs, res.Tokens)
		assert.Equal(t, r.PromptIDs, res.PromptTokens)
		assert.Equal(t, r.Text, r.Prompt+res.Text)
		assert.Equal(t, "length", res.FinishReason)
		assert.Equal(t, len(r.PromptIDs)+len(r.GeneratedIDs), res.Usage.TotalTokens)

		// Without -json the completion streams to stdout, statistics to stderr.
		code, out, errOut = runCLI(t, "generate", "-p", r.Prompt, "-temp", "0", "-n", n)
		require.Equal(t, exitOK, code, errOut)
		assert.Equal(t, r.Text+"\n", r.Prompt+out)
		assert.Contains(t, errOut, "tok/s")
	}
}

func TestGenerateGGUFAndStop(t *testing.T) {
	g := golden.RuncStories260K(t)
	want := strings.TrimPrefix(g.Runs[1].Text, g.Runs[1].Prompt) // "Once upon a time" → ", there was a little girl named Lily. ..."
	code, out, errOut := runCLI(t, "generate", "-m", "../../engine/testdata/gguf/stories260K-F32.gguf",
		"-p", "Once upon a time", "-temp", "0", "-n", "40", "-stop", "Lily", "-json")
	require.Equal(t, exitOK, code, errOut)
	var res generateJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, want[:strings.Index(want, "Lily")], res.Text)
	assert.Equal(t, "stop", res.FinishReason)
}

func TestSeedIsReproducible(t *testing.T) {
	args := []string{"generate", "-p", "The little dog", "-n", "30", "-seed", "1234", "-json"}
	_, a, _ := runCLI(t, args...)
	_, b, _ := runCLI(t, args...)
	var ra, rb generateJSON
	require.NoError(t, json.Unmarshal([]byte(a), &ra))
	require.NoError(t, json.Unmarshal([]byte(b), &rb))
	assert.Equal(t, ra.Tokens, rb.Tokens)
	assert.Equal(t, uint64(1234), ra.Seed)
}

func TestTokenizeAndInfo(t *testing.T) {
	g := golden.RuncStories260K(t)
	code, out, _ := runCLI(t, "tokenize", "Once upon a time")
	require.Equal(t, exitOK, code)
	assert.JSONEq(t, "[1,403,407,261,378]", out)
	assert.Equal(t, g.Runs[1].PromptIDs, []int{1, 403, 407, 261, 378})

	code, out, _ = runCLI(t, "tokenize", "-no-bos", "Once", "upon", "a", "time")
	require.Equal(t, exitOK, code)
	assert.JSONEq(t, "[403,407,261,378]", out)

	code, out, _ = runCLI(t, "tokenize", "-special", "<s>Once")
	require.Equal(t, exitOK, code)
	var ids []int
	require.NoError(t, json.Unmarshal([]byte(out), &ids))
	assert.Equal(t, []int{1, 1}, ids[:2], "the literal <s> is BOS with -special")

	code, out, _ = runCLI(t, "info")
	require.Equal(t, exitOK, code)
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.EqualValues(t, 512, info["vocab_size"])
	assert.Equal(t, "llama", info["architecture"])
	assert.Equal(t, "f32", info["kv_type"], "the default KV cache of a model of 260K parameters")

	code, out, _ = runCLI(t, "info", "-m", "../../engine/testdata/gguf/stories260K-Q8_0.gguf")
	require.Equal(t, exitOK, code)
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.Equal(t, "gguf", info["format"])
	meta, ok := info["metadata"].(map[string]any)
	require.True(t, ok, "GGUF metadata is printed")
	assert.Equal(t, "llama", meta["general.architecture"])
}

// TestGenerateKVType: -kv-type chooses the session's KV cache (stderr says
// which; auto is f32 for the small default model), and greedy generation
// of the F32 GGUF gives llama2.c's tokens with either, as llama.cpp's does
// (engine's golden tests compare every file type with llama.cpp's runs).
func TestGenerateKVType(t *testing.T) {
	for _, c := range []struct{ flag, want string }{{"auto", "f32"}, {"f32", "f32"}, {"f16", "f16"}} {
		code, out, errOut := runCLI(t, "generate", "-m", "../../engine/testdata/gguf/stories260K-F32.gguf",
			"-p", "Once upon a time", "-temp", "0", "-n", "64", "-kv-type", c.flag, "-json")
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, errOut, "; KV cache "+c.want+"\n", c.flag)
		var res generateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.Equal(t, golden.RuncStories260K(t).Runs[1].GeneratedIDs[:64], res.Tokens, "-kv-type %s", c.flag)
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	endless, minLength := filepath.Join(dir, "endless.gbnf"), filepath.Join(dir, "min.json")
	require.NoError(t, os.WriteFile(endless, []byte(`root ::= "a" root`), 0o644))
	require.NoError(t, os.WriteFile(minLength, []byte(`{"type":"object","properties":{"k":{"type":"string","minLength":5000}}}`), 0o644))
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: wasmlm"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"generate", "-bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"generate", "stray"}, exitUsage, "the prompt goes in -p"},
		{[]string{"generate", "-top-p", "2"}, exitUsage, "-top-p must be in [0, 1] (0 or 1 = off), got 2"},
		{[]string{"generate", "-temp", "-1"}, exitUsage, "-temp must be finite and >= 0, got -1"},
		{[]string{"generate", "-n", "-5"}, exitUsage, "-n must be >= 0 (0: until the context is full), got -5"},
		{[]string{"generate", "-stop", "a", "-stop", ""}, exitUsage, "-stop (the 2nd one given) must be valid UTF-8 of 1..256 bytes"},
		{[]string{"generate", "-ctx", "100000000"}, exitUsage, "-ctx must be in 0..16777216"},
		{[]string{"generate", "-temp", "1e40"}, exitUsage, "-temp must be a finite number of float32 range, got 1e+40"},
		{[]string{"generate", "-grammar", "testdata/no-such.gbnf"}, exitUsage, "-grammar: open testdata/no-such.gbnf"},
		{[]string{"generate", "-grammar", "main_test.go"}, exitUsage, "-grammar main_test.go: is not a grammar this engine takes: line 1 column 9: expecting ::= after \"package\""},
		{[]string{"generate", "-json-schema", "main_test.go"}, exitUsage, "-json-schema main_test.go: cannot be used: not JSON"},
		{[]string{"generate", "-grammar", endless}, exitUsage, "-grammar " + endless + `: is not a grammar this engine takes: rule "root" can never end`},
		{[]string{"generate", "-json-schema", minLength}, exitUsage, "-json-schema " + minLength + `: properties.k.minLength cannot be used: "minLength" is 5000`},
		{[]string{"generate", "-grammar", "a", "-json-schema", "b"}, exitUsage, "-grammar and -json-schema exclude each other"},
		{[]string{"generate", "-grammar", "/dev/null"}, exitUsage, "-grammar /dev/null: the file is empty"},
		{[]string{"generate", "-json-schema", "../../grammar/jsonschema/testdata/corpus/person.json", "-stop", ","}, exitUsage, "-stop cannot be combined with a grammar"},
		{[]string{"generate", "-seed", "-7"}, exitUsage, "-seed"},
		{[]string{"generate", "-m", "/nonexistent/model.gguf"}, exitError, "no such file"},
		{[]string{"generate", "-tokenizer", "tok.bin"}, exitError, "-tokenizer needs -m"},
		{[]string{"generate", "-m", "../../internal/testmodel/testdata/stories260K.bin"}, exitError, "needs its tokenizer.bin"},
		{[]string{"generate", "-p", strings.Repeat("once upon a time ", 200)}, exitError, "prompt too long"},
		{[]string{"info", "extra"}, exitUsage, "the model goes in -m"},
		{[]string{"tokenize", "bad \xff"}, exitError, "UTF-8"},
		{[]string{"generate", "-kv-type", "f8"}, exitUsage, `invalid value "f8" for flag -kv-type: engine: invalid option: kv_type must be auto, f16 or f32, got "f8"`},
		{[]string{"serve", "-kv-type", "F16"}, exitUsage, `invalid value "F16" for flag -kv-type`},
		{[]string{"bench", "-kv-type", ""}, exitUsage, `invalid value "" for flag -kv-type`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

// TestGenerateJSONSchema: -json-schema's output is the schema's JSON, at
// temperature 1, however short -n is (the budget closes it in time).
func TestGenerateJSONSchema(t *testing.T) {
	for _, n := range []string{"30", "80"} {
		code, out, errOut := runCLI(t, "generate", "-json-schema", "../../grammar/jsonschema/testdata/corpus/person.json",
			"-temp", "1", "-seed", "7", "-n", n, "-p", "Once upon a time", "-json")
		require.Equal(t, exitOK, code, errOut)
		var res generateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		var person struct {
			Name *string `json:"name"`
			Age  *int    `json:"age"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Text), &person), res.Text)
		require.NotNil(t, person.Name, res.Text)
		require.NotNil(t, person.Age, res.Text)
	}
}
