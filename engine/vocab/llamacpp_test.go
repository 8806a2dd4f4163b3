//go:build !js

package vocab

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/longtest"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestPreTokenizersAsLlamaCpp tokenizes a few thousand strings with the
// llama.cpp build of node-llama-cpp (pinned in package.json) and with this
// package, on the same GGUF files, and requires the same ids for every
// string: each byte-level BPE vocabulary of testdata under its own
// pre-tokenizer, and the gpt-2 vocabulary relabelled with the pre-tokenizer
// names that have no vocabulary file here (tokenizer.ggml.pre set to
// "gpt-4o", the o200k splitter of Phi-4-mini, Llama 4 and gpt-oss, to
// "qwen35" and "lfm2", and to the others), which llama.cpp then splits by that name's regex, and the
// gpt-neox and falcon vocabularies relabelled "gpt-4o". The strings
// are llama.cpp's own test-tokenizer-0 inputs, the seeded random strings
// of tokenizer/bpe's JavaScript reference (mixed scripts, emoji, numbers,
// white space, code, contractions) and cases chosen for the gpt-4o rules:
// in make test every tenth random string (300 of 3000), in make test-long
// (WASMLM_LONG=1) all of them.
func TestPreTokenizersAsLlamaCpp(t *testing.T) {
	r := llamacppref.Need(t)
	texts := llamaCppTestTexts(t)
	type vocabCase struct{ file, pre string }
	var cases []vocabCase
	for _, name := range bpeVocabs {
		cases = append(cases, vocabCase{name, ""})
	}
	for _, pre := range []string{"gpt-4o", "llama4", "llama-bpe", "qwen2", "smaug-bpe", "dbrx", "smollm", "command-r", "qwen35", "lfm2"} {
		cases = append(cases, vocabCase{"gpt-2", pre})
	}
	// gpt-neox and falcon have tokens that join a non-ASCII letter and an
	// ASCII capital ("μM", "κB", "ÃO"), which gpt-4o's split keeps apart:
	// with GPT-2's vocabulary, which has none, where it cuts there would
	// not show.
	cases = append(cases, vocabCase{"gpt-neox", "gpt-4o"}, vocabCase{"falcon", "gpt-4o"})
	dir := t.TempDir()
	jobs := make([]llamacppref.Job, len(cases))
	toks := make([]tokenizer.Tokenizer, len(cases))
	names := make([]string, len(cases))
	for k, c := range cases {
		names[k] = c.file
		if c.pre != "" {
			names[k] += "-as-" + c.pre
		}
		data := readVocabGGUF(t, c.file)
		if c.pre != "" {
			var err error
			data, err = modelgen.SetKV(data, keyPre, gguf.ValueOf(c.pre))
			require.NoError(t, err)
		}
		path := filepath.Join(dir, names[k]+".gguf")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		f, err := gguf.Parse(data)
		require.NoError(t, err)
		toks[k], err = FromGGUF(f)
		require.NoError(t, err, names[k])
		jobs[k] = llamacppref.Job{Model: path, Texts: texts}
	}
	outs, err := r.Run(jobs) // one Node.js process for them all
	require.NoError(t, err)
	for k, out := range outs {
		t.Run(names[k], func(t *testing.T) {
			require.Empty(t, out.Error, "llama.cpp refused the vocabulary")
			require.Len(t, out.Tokenized, len(texts))
			differ := 0
			for i, text := range texts {
				got, err := toks[k].Encode(text, tokenizer.EncodeOptions{})
				require.NoError(t, err)
				if !assert.Equal(t, out.Tokenized[i], got, "string %d %q", i, text) {
					if differ++; differ == 10 {
						t.Fatal("10 strings differ; stopping")
					}
				}
			}
		})
	}
}

// llamaCppTestTexts are the strings TestPreTokenizersAsLlamaCpp tokenizes.
func llamaCppTestTexts(t *testing.T) []string {
	t.Helper()
	texts := []string{
		// gpt-4o's case rules as llama.cpp rewrites them: ASCII case cuts
		// words, non-ASCII letters are either case, marks are neither.
		"HelloWorld", "helloWorld", "HELLOworld", "HTTPServer", "iPhone", "McDonald's",
		"ÉCOLE", "École", "éCOLE", "ÀbC", "5 μM", " μM μL", "64 κB", "NAÇÃO ACCIÓN CORAÇÃO", "ЖИЗНЬ", "Жизнь", "жИЗНЬ", "ΑΘΗΝΑ Αθήνα",
		"naïve café", "nai\u0308ve", "नमस्ते दुनिया", "สวัสดีครับ", "中文English混合", "日本語のテキスト",
		"DON'T don't Don'T I'M we'LL they'Re", "'s 'S x's X'S", "’s", "l'été",
		"path/to/file/", "a//b", "<a href=\"/x/y\">", "x = y / z;\n", "...///\n\n/",
		"  leading", "trailing  ", "\n\n\nx", "\r\n\r\n", "tab\tsep", "\u00a0nbsp\u3000ideo",
		"123456789", "1,234,567.89", "٣٤٥٦ ١٢", "x1y22z333", "v2.0-beta",
		"emoji 🦙🦙 👨‍👩‍👧 ok", "\u2028line\u2029para",
		// Combining marks, which Qwen3.5's regex joins to letters' runs.
		"e\u0301t\u00e9 e\u0301", "\u0301\u0301x", " \u0301", "'\u0301s", "x\n\u0301", "1\u0301 ?\u0301!",
		"\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627", "Vie\u0302\u0323t Nam", "\u0915\u093f\u0924\u093e\u092c\u0947\u0902 \u0c24\u0c46\u0c32\u0c41\u0c17\u0c41",
	}
	// Every vocabulary's vectors are the same strings: each once.
	seen := map[string]bool{}
	for _, name := range bpeVocabs {
		if name == "gpt-neox" {
			continue // no vectors
		}
		inp, _ := readVocabTest(t, filepath.Join("testdata", "ggml-vocab-"+name+".gguf"))
		for _, text := range inp {
			if !seen[text] {
				seen[text] = true
				texts = append(texts, text)
			}
		}
	}
	gz, err := os.ReadFile(filepath.Join("..", "..", "tokenizer", "bpe", "testdata", "reference.json.gz"))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	var ref struct {
		Cases []struct {
			Text string `json:"text"`
		} `json:"cases"`
	}
	require.NoError(t, json.NewDecoder(zr).Decode(&ref))
	for _, c := range longtest.Every(ref.Cases, 10) {
		texts = append(texts, c.Text)
	}
	return texts
}
