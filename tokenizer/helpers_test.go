package tokenizer

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readTestdata reads a file of testdata/.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// loadLlama2C loads a llama2.c tokenizer file of testdata/.
func loadLlama2C(t testing.TB, name string) *SPM {
	t.Helper()
	tok, err := LoadLlama2C(readTestdata(t, name))
	require.NoError(t, err)
	return tok
}

// rawEntry is one entry of a llama2.c tokenizer file.
type rawEntry struct {
	score float32
	text  string
}

// parseLlama2CNaive is the simplest reader of a well-formed llama2.c
// tokenizer file, independent of LoadLlama2C. ends[i] is the byte offset
// just past entry i.
func parseLlama2CNaive(t testing.TB, data []byte) (entries []rawEntry, ends []int) {
	t.Helper()
	off := 4
	for off < len(data) {
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int(binary.LittleEndian.Uint32(data[off+4:]))
		require.LessOrEqual(t, off+8+n, len(data), "test data must be well-formed")
		entries = append(entries, rawEntry{score, string(data[off+8 : off+8+n])})
		off += 8 + n
		ends = append(ends, off)
	}
	return entries, ends
}

// writeLlama2C builds a llama2.c tokenizer file.
func writeLlama2C(maxLen int32, entries []rawEntry) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
	for _, e := range entries {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(e.score))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(e.text)))
		out = append(out, e.text...)
	}
	return out
}

// llamaCppVocab is one vocabulary's results in tokenizer_llama_cpp.json.
type llamaCppVocab struct {
	Default             [][]int `json:"default"`
	NoBOS               [][]int `json:"no_bos"`
	NoParseSpecial      [][]int `json:"no_parse_special"`
	NoBOSNoParseSpecial [][]int `json:"no_bos_no_parse_special"`
	AddBOSByDefault     bool    `json:"add_bos_by_default"`
}

// llamaCppGolden is tokenizer_llama_cpp.json: llama-tokenize outputs.
type llamaCppGolden struct {
	Strings []string                 `json:"strings"`
	Vocabs  map[string]llamaCppVocab `json:"vocabs"`
}

func loadLlamaCppGolden(t testing.TB) llamaCppGolden {
	t.Helper()
	var g llamaCppGolden
	require.NoError(t, json.Unmarshal(readTestdata(t, "tokenizer_llama_cpp.json"), &g))
	return g
}

// llamaSPMConfig is the vocabulary of llama.cpp's ggml-vocab-llama-spm.gguf,
// rebuilt from tokenizer.bin: that GGUF holds the same pieces and scores
// (with U+2581 for spaces, "<s>" and "</s>" for BOS and EOS), token types
// unknown (id 0), control (1, 2), byte (3..258) and normal (the rest), BOS 1,
// EOS 2, UNK 0, add_bos true, add_eos false and no add_space_prefix key
// (llama.cpp's SPM default, true). testdata/README.md records the check.
func llamaSPMConfig(t testing.TB) SPMConfig {
	t.Helper()
	entries, _ := parseLlama2CNaive(t, readTestdata(t, "tokenizer.bin"))
	cfg := SPMConfig{
		Tokens:         make([]string, len(entries)),
		Scores:         make([]float32, len(entries)),
		Types:          make([]TokenType, len(entries)),
		Special:        Special{BOS: 1, EOS: 2, UNK: 0, EOT: -1, PAD: -1, SEP: -1, AddBOS: true},
		AddSpacePrefix: true,
	}
	for id, e := range entries {
		cfg.Tokens[id] = strings.ReplaceAll(e.text, " ", SpaceMarker)
		cfg.Scores[id] = e.score
		switch {
		case id == 0:
			cfg.Types[id] = TokenUnknown
		case id <= 2:
			cfg.Types[id] = TokenControl
		case id <= 258:
			cfg.Types[id] = TokenByte
		default:
			cfg.Types[id] = TokenNormal
		}
	}
	cfg.Tokens[1], cfg.Tokens[2] = "<s>", "</s>"
	return cfg
}

// phi3Config is the vocabulary of llama.cpp's ggml-vocab-phi-3.gguf: the
// llama-spm one with the differences and added tokens of
// phi3_vocab_delta.json, plus the RSTRIP attributes llama.cpp's vocabulary
// loader gives models whose general.name contains "phi3": every control,
// user-defined and unknown token, and "</s>", but not "<unk>", "<s>" and
// "<|endoftext|>".
func phi3Config(t testing.TB) SPMConfig {
	t.Helper()
	var delta struct {
		Name      string `json:"general.name"`
		VocabSize int    `json:"vocab_size"`
		BOS       int    `json:"bos"`
		EOS       int    `json:"eos"`
		UNK       int    `json:"unk"`
		PAD       int    `json:"pad"`
		AddBOS    bool   `json:"add_bos"`
		AddEOS    bool   `json:"add_eos"`
		Tokens    []struct {
			ID    int       `json:"id"`
			Text  string    `json:"text"`
			Score float32   `json:"score"`
			Type  TokenType `json:"type"`
		} `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal(readTestdata(t, "phi3_vocab_delta.json"), &delta))
	require.Contains(t, strings.ToLower(delta.Name), "phi3")

	cfg := llamaSPMConfig(t)
	for len(cfg.Tokens) < delta.VocabSize {
		cfg.Tokens = append(cfg.Tokens, "")
		cfg.Scores = append(cfg.Scores, 0)
		cfg.Types = append(cfg.Types, TokenUndefined)
	}
	for _, d := range delta.Tokens {
		cfg.Tokens[d.ID], cfg.Scores[d.ID], cfg.Types[d.ID] = d.Text, d.Score, d.Type
	}
	cfg.Special = Special{BOS: delta.BOS, EOS: delta.EOS, UNK: delta.UNK, EOT: -1, PAD: delta.PAD, SEP: -1,
		AddBOS: delta.AddBOS, AddEOS: delta.AddEOS}
	for id, typ := range cfg.Types {
		switch text := cfg.Tokens[id]; {
		case text == "<unk>", text == "<s>", text == "<|endoftext|>":
		case text == "</s>", typ == TokenControl, typ == TokenUserDefined, typ == TokenUnknown:
			cfg.RStrip = append(cfg.RStrip, id)
		}
	}
	return cfg
}

// naiveLlama2C is llama2.c's encode() written plainly, the O(n²) reference
// for the heap-based Encode.
type naiveLlama2C struct {
	entries []rawEntry
	lookup  map[string]int
}

func newNaiveLlama2C(entries []rawEntry) naiveLlama2C {
	lookup := make(map[string]int, len(entries))
	for id, e := range entries {
		lookup[e.text] = id
	}
	return naiveLlama2C{entries, lookup}
}

// encode adds the dummy prefix, makes one token per character or its bytes
// (byte + 3), then repeatedly applies the best-scoring adjacent merge,
// leftmost on ties, found by rescanning.
func (v naiveLlama2C) encode(text string, bos bool) []int {
	entries, lookup := v.entries, v.lookup
	ids := []int{}
	if bos {
		ids = append(ids, 1)
	}
	if text != "" {
		ids = append(ids, lookup[" "])
	}
	for _, r := range text {
		c := string(r)
		if id, ok := lookup[c]; ok {
			ids = append(ids, id)
			continue
		}
		for _, b := range []byte(c) {
			ids = append(ids, int(b)+3)
		}
	}
	for {
		bestScore, bestID, bestIdx := float32(-1e10), -1, -1
		for i := 0; i+1 < len(ids); i++ {
			id, ok := lookup[entries[ids[i]].text+entries[ids[i+1]].text]
			if ok && entries[id].score > bestScore {
				bestScore, bestID, bestIdx = entries[id].score, id, i
			}
		}
		if bestIdx < 0 {
			return ids
		}
		ids[bestIdx] = bestID
		ids = append(ids[:bestIdx+1], ids[bestIdx+2:]...)
	}
}
