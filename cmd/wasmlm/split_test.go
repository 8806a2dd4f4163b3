package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

var updateMerge = flag.Bool("update-merge", false,
	"rewrite "+mergeGoldenPath+" by running llama.cpp's llama-gguf-split, named by $LLAMA_GGUF_SPLIT (see engine/gguf's -update-split)")

// mergeGoldenPath holds what llama-gguf-split wrote from splitSpec's model:
// its parts (--split-max-tensors 10) and the file --merge joined from them.
const mergeGoldenPath = "testdata/split-merge.json"

// splitSpec is a small model llama.cpp loads: 29 tensors, Q8_0 matrices,
// BOS and EOS muted so greedy decoding never stops early, weights large
// enough (Std 1) that it does not repeat one token: a split that mixed up
// tensors would show in its greedy tokens.
var splitSpec = modelgen.Spec{
	Name:        "split-test",
	Shape:       modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 3, Heads: 4, KVHeads: 2, VocabSize: 320, ContextLength: 64},
	Type:        tensor.Q8_0,
	MuteSpecial: true,
	Seed:        13,
	Std:         1,
}

// splitModel writes splitSpec's model to a new directory whole (m.gguf)
// and in 3 parts (m-0000N-of-00003.gguf), and returns the paths of the
// whole file and of the first part.
func splitModel(t *testing.T) (whole, first string, parts [][]byte) {
	t.Helper()
	dir := t.TempDir()
	data, err := modelgen.Build(splitSpec)
	require.NoError(t, err)
	whole = filepath.Join(dir, "m.gguf")
	require.NoError(t, os.WriteFile(whole, data, 0o644))
	parts, err = modelgen.BuildSplit(splitSpec, 3)
	require.NoError(t, err)
	for i, p := range parts {
		require.NoError(t, os.WriteFile(gguf.SplitPath(filepath.Join(dir, "m"), i+1, 3), p, 0o644))
	}
	return whole, gguf.SplitPath(filepath.Join(dir, "m"), 1, 3), parts
}

// TestSplitModelRuns: -m with the first part runs the model as the whole
// file does: the same greedy tokens, token ids and model info.
func TestSplitModelRuns(t *testing.T) {
	whole, first, _ := splitModel(t)
	generate := func(model string) generateJSON {
		code, out, errOut := runCLI(t, "generate", "-m", model, "-p", "Once upon a time", "-temp", "0", "-n", "24", "-json")
		require.Equal(t, exitOK, code, errOut)
		var res generateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		return res
	}
	a, b := generate(whole), generate(first)
	require.Len(t, a.Tokens, 24)
	assert.Equal(t, a.Tokens, b.Tokens)
	assert.Equal(t, a.PromptTokens, b.PromptTokens)
	assert.Equal(t, a.Text, b.Text)

	code, wantIDs, errOut := runCLI(t, "tokenize", "-m", whole, "Once upon a time")
	require.Equal(t, exitOK, code, errOut)
	code, gotIDs, errOut := runCLI(t, "tokenize", "-m", first, "Once upon a time")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, wantIDs, gotIDs)

	info := func(model string) map[string]any {
		code, out, errOut := runCLI(t, "info", "-m", model)
		require.Equal(t, exitOK, code, errOut)
		var info map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &info))
		delete(info, "file_size")
		return info
	}
	want, got := info(whole), info(first)
	meta := got["metadata"].(map[string]any)
	assert.EqualValues(t, 0, meta[gguf.SplitCountKey], "the joined file is marked whole, as llama-gguf-split --merge marks it")
	for _, key := range []string{gguf.SplitNoKey, gguf.SplitCountKey, gguf.SplitTensorsKey} {
		delete(meta, key)
	}
	assert.Equal(t, want, got)
}

// TestSplitJoinIsLlamaGGUFSplitMerge: the parts BuildSplit writes are
// llama-gguf-split's, and the file -m joins from them is the one
// llama-gguf-split --merge writes.
func TestSplitJoinIsLlamaGGUFSplitMerge(t *testing.T) {
	if *updateMerge {
		updateMergeGolden(t)
	}
	var golden mergeGolden
	data, err := os.ReadFile(mergeGoldenPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &golden))
	_, first, parts := splitModel(t)
	var got []string
	for _, p := range parts {
		got = append(got, digest(p))
	}
	assert.Equal(t, golden.Parts, got)
	joined, err := readModel(first)
	require.NoError(t, err)
	assert.Equal(t, golden.Merged, digest(joined))
}

type mergeGolden struct {
	Tool   string   `json:"tool"`
	Parts  []string `json:"parts"`  // size:sha256 of each part
	Merged string   `json:"merged"` // size:sha256 of the merged file
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return strconv.Itoa(len(data)) + ":" + hex.EncodeToString(sum[:])
}

func updateMergeGolden(t *testing.T) {
	tool := os.Getenv("LLAMA_GGUF_SPLIT")
	require.NotEmpty(t, tool, "-update-merge runs the llama-gguf-split that $LLAMA_GGUF_SPLIT names")
	whole, _, _ := splitModel(t)
	dir := t.TempDir()
	run := func(args ...string) {
		out, err := exec.Command(tool, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	run("--split-max-tensors", "10", whole, filepath.Join(dir, "out"))
	names, err := filepath.Glob(filepath.Join(dir, "out-*.gguf"))
	require.NoError(t, err)
	slices.Sort(names)
	golden := mergeGolden{Tool: "llama-gguf-split of llama.cpp 80fb11a (node-llama-cpp 3.21.1's source): --split-max-tensors 10, then --merge"}
	for _, name := range names {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		golden.Parts = append(golden.Parts, digest(data))
	}
	run("--merge", names[0], filepath.Join(dir, "merged.gguf"))
	data, err := os.ReadFile(filepath.Join(dir, "merged.gguf"))
	require.NoError(t, err)
	golden.Merged = digest(data)
	out, err := json.MarshalIndent(golden, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(mergeGoldenPath), 0o755))
	require.NoError(t, os.WriteFile(mergeGoldenPath, append(out, '\n'), 0o644))
}

// TestSplitModelErrors: a split model that is not whole fails with an error
// naming the part at fault.
func TestSplitModelErrors(t *testing.T) {
	// partFile writes a part of count holding tensors, with split.no index
	// and split.tensors.count total, as prefix-0000N-of-0000count.gguf.
	partFile := func(prefix string, no, count, index, total int, tensors ...string) {
		b := gguf.NewBuilder()
		if index == 0 {
			b.Set("general.architecture", gguf.ValueOf("llama"))
		}
		b.Set(gguf.SplitNoKey, gguf.ValueOf(uint16(index)))
		b.Set(gguf.SplitCountKey, gguf.ValueOf(uint16(count)))
		b.Set(gguf.SplitTensorsKey, gguf.ValueOf(int32(total)))
		for _, name := range tensors {
			b.AddTensor(name, tensor.F32, []uint64{8}, make([]byte, 32))
		}
		data, err := b.Bytes()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(gguf.SplitPath(prefix, no, count), data, 0o644))
	}
	whole, first, parts := splitModel(t)
	dir := filepath.Dir(first)
	p := func(name string) string { return filepath.Join(dir, name) }

	require.NoError(t, os.WriteFile(p("gone-00001-of-00003.gguf"), parts[0], 0o644))
	require.NoError(t, os.WriteFile(p("gone-00002-of-00003.gguf"), parts[1], 0o644))
	require.NoError(t, os.WriteFile(p("swapped-00001-of-00003.gguf"), parts[0], 0o644))
	require.NoError(t, os.WriteFile(p("swapped-00002-of-00003.gguf"), parts[2], 0o644))
	require.NoError(t, os.WriteFile(p("swapped-00003-of-00003.gguf"), parts[1], 0o644))
	require.NoError(t, os.WriteFile(p("count-00001-of-00002.gguf"), parts[0], 0o644))
	require.NoError(t, os.WriteFile(p("renamed.gguf"), parts[0], 0o644))
	partFile(p("dup"), 1, 2, 0, 2, "a")
	partFile(p("dup"), 2, 2, 1, 2, "a")
	partFile(p("few"), 1, 2, 0, 3, "a")
	partFile(p("few"), 2, 2, 1, 3, "b")
	partFile(p("plain"), 1, 2, 0, 2, "a")
	plain := gguf.NewBuilder()
	plain.AddTensor("b", tensor.F32, []uint64{8}, make([]byte, 32))
	data, err := plain.Bytes()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p("plain-00002-of-00002.gguf"), data, 0o644))

	for _, c := range []struct{ model, want string }{
		{gguf.SplitPath(p("m"), 2, 3), "m-00002-of-00003.gguf is part 2 of 3 of a split model: -m takes its first part, " + first},
		{p("gone-00001-of-00003.gguf"), "part 3 of 3 of the split model is missing: open " + p("gone-00003-of-00003.gguf")},
		{p("swapped-00001-of-00003.gguf"), "swapped-00002-of-00003.gguf says it is part 3 of 3 (split.no, split.count), not part 2 of 3 as its name says"},
		{p("count-00001-of-00002.gguf"), "count-00001-of-00002.gguf says it is part 1 of 3 (split.no, split.count), not part 1 of 2 as its name says"},
		{p("dup-00001-of-00002.gguf"), p("dup-00001-of-00002.gguf") + `: gguf: malformed file: tensor "a" is in both part 1 and part 2`},
		{p("few-00001-of-00002.gguf"), p("few-00001-of-00002.gguf") + ": gguf: malformed file: the 2 parts hold 2 tensors; the first says 3 (split.tensors.count)"},
		{p("plain-00001-of-00002.gguf"), "plain-00002-of-00002.gguf is not a part of a split model: it has no split.count"},
		{p("renamed.gguf"), "renamed.gguf is part 1 of 3 of a split model; its parts are found by their names, name-00001-of-00003.gguf)"},
	} {
		code, _, errOut := runCLI(t, "info", "-m", c.model)
		assert.Equal(t, exitError, code, c.model)
		assert.Contains(t, errOut, c.want)
		t.Log(errOut)
	}

	// A whole model under a part's name loads, as llama.cpp loads it: it
	// goes by split.count.
	data, err = os.ReadFile(whole)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p("whole-00001-of-00002.gguf"), data, 0o644))
	code, _, errOut := runCLI(t, "info", "-m", p("whole-00001-of-00002.gguf"))
	assert.Equal(t, exitOK, code, errOut)
}
