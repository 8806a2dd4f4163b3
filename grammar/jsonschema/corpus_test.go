//go:build !js

package jsonschema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus/NAME.gbnf, the grammars ToGBNF gives the corpus")

// corpusCase is one schema of testdata/corpus with its instances.
//
// NAME.json is the schema; NAME.valid.jsonl and NAME.invalid.jsonl hold
// texts (one JSON string per line, whose value is the text: a text may span
// lines, or not be JSON) that ajv finds valid and invalid;
// NAME.llamacpp.gbnf is llama.cpp's grammar for the schema, or
// NAME.llamacpp.err its converter's error (tools/llamacpp-gbnf.sh writes
// both); NAME.gbnf is ToGBNF's (go test -update rewrites it).
type corpusCase struct {
	name            string
	schema          []byte
	valid, invalid  []string
	llama, llamaErr string
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	for _, f := range files {
		base := strings.TrimSuffix(f, ".json")
		c := corpusCase{name: filepath.Base(base)}
		if c.schema, err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
		c.valid = readTexts(t, base+".valid.jsonl")
		c.invalid = readTexts(t, base+".invalid.jsonl")
		if len(c.valid) < 3 || len(c.invalid) < 3 {
			t.Fatalf("%s: %d valid and %d invalid texts, want at least 3 of each", c.name, len(c.valid), len(c.invalid))
		}
		if b, err := os.ReadFile(base + ".llamacpp.gbnf"); err == nil {
			c.llama = string(b)
		} else if b, err := os.ReadFile(base + ".llamacpp.err"); err == nil {
			c.llamaErr = strings.TrimSpace(string(b))
		} else {
			t.Fatalf("%s: neither %s.llamacpp.gbnf nor .err: run tools/llamacpp-gbnf.sh", c.name, base)
		}
		cases = append(cases, c)
	}
	if len(cases) < 30 {
		t.Fatalf("%d corpus schemas, want at least 30", len(cases))
	}
	return cases
}

func readTexts(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %q is not a JSON string: %v", path, sc.Text(), err)
		}
		texts = append(texts, s)
	}
	return texts
}

// TestCorpusConverts converts every corpus schema and compares the grammar
// with NAME.gbnf.
func TestCorpusConverts(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.name, func(t *testing.T) {
			g, err := ToGBNF(c.schema)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata/corpus", c.name+".gbnf")
			if *update {
				if err := os.WriteFile(path, []byte(g), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if g != string(want) {
				t.Errorf("ToGBNF differs from %s (go test -update rewrites it):\n%s", path, g)
			}
		})
	}
}

// variants are texts made from a valid one: its truncations, and
// whitespace added where JSON allows it (outside strings, around the
// structural characters), in amounts llama.cpp's space rule allows and
// does not.
func variants(text string) []string {
	var out []string
	runes := []rune(text)
	step := max(1, len(runes)/40) // at most about 40 truncations
	for i := 0; i < len(runes); i += step {
		out = append(out, string(runes[:i]))
	}
	var cuts []int // rune offsets between tokens
	inString, escaped := false, false
	for i, r := range runes {
		switch {
		case inString && escaped:
			escaped = false
		case inString && r == '\\':
			escaped = true
		case r == '"':
			inString = !inString
		case !inString && strings.ContainsRune("{}[],:", r):
			cuts = append(cuts, i, i+1)
		}
	}
	spaces := []string{" ", "\n", "\n\n\t\t", "\n\n\n", "  ", "\t", strings.Repeat(" ", 21)}
	for k, cut := range cuts {
		ws := spaces[k%len(spaces)]
		out = append(out, string(runes[:cut])+ws+string(runes[cut:]))
	}
	return append(out, " "+text, text+" ", text+"\n")
}

// TestCorpusRefs checks checkRefs on the corpus (llama.cpp's parser checks
// the same in TestCorpusDifferential).
func TestCorpusRefs(t *testing.T) {
	for _, c := range loadCorpus(t) {
		g, err := ToGBNF(c.schema)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := checkRefs(g); err != "" {
			t.Errorf("%s: %s", c.name, err)
		}
	}
	if err := checkRefs("root ::= a\n"); err == "" {
		t.Error("checkRefs misses an undefined rule")
	}
}
