//go:build !js

// Package grammarref asks the references of grammar-constrained sampling
// for their verdicts on texts: llama.cpp, whether a GBNF grammar accepts a
// whole text (node-llama-cpp's prebuilt binary, pinned in package.json:
// llama_grammar_accept over the text's code points), and ajv, whether a
// JSON text is valid against a JSON Schema (draft 2020-12, with
// ajv-formats). The tests of grammar/jsonschema hold their grammars to
// both.
//
// It runs Node.js (one process per Run), so it is test machinery for native
// builds only, like internal/llamacppref.
package grammarref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// script is the Node.js program, relative to the module's root, where
// node_modules is.
const script = "internal/grammarref/grammarref.mjs"

// Runner runs the references through Node.js.
type Runner struct {
	node string // the node executable
	root string // the module's root, where node_modules is
}

// Need returns a Runner when Node.js and the repository's node-llama-cpp
// and ajv (npm ci --omit=optional at the root) are installed. Otherwise it
// skips t, saying what is missing, or fails it in CI (the environment
// variable CI set), where they are installed.
func Need(t testing.TB) *Runner {
	t.Helper()
	r, err := find()
	if err == nil {
		return r
	}
	if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	t.Skip(err)
	return nil
}

func find() (*Runner, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("grammarref needs Node.js (Debian package nodejs)")
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	for _, pkg := range []string{"node-llama-cpp", "ajv", "ajv-formats"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", pkg, "package.json")); err != nil {
			return nil, fmt.Errorf("grammarref needs %s: run npm ci --omit=optional at the repository root (make test does)", pkg)
		}
	}
	return &Runner{node: node, root: root}, nil
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("grammarref: no go.mod above the working directory")
		}
		dir = parent
	}
}

// GrammarJob is texts for llama.cpp to match against one grammar (GBNF,
// from its rule root).
type GrammarJob struct {
	Grammar string   `json:"grammar"`
	Texts   []string `json:"texts"`
}

// GrammarResult is llama.cpp's verdict: Accepts[i] whether the grammar
// matches all of Texts[i]; or Error, why llama.cpp's parser refused the
// grammar (Accepts is then nil).
type GrammarResult struct {
	Accepts []bool `json:"accepts"`
	Error   string `json:"error"`
}

// SchemaJob is JSON texts for ajv to validate against one schema.
type SchemaJob struct {
	Schema json.RawMessage `json:"schema"`
	Texts  []string        `json:"texts"`
}

// SchemaResult is ajv's verdict: Valid[i] whether Texts[i] is JSON valid
// against the schema; or Error, why ajv refused the schema.
type SchemaResult struct {
	Valid []bool `json:"valid"`
	Error string `json:"error"`
}

// Run has llama.cpp and ajv judge every job, in one Node.js process. An
// error is the process's failure; a grammar or schema refused is its
// result's Error.
func (r *Runner) Run(grammars []GrammarJob, schemas []SchemaJob) ([]GrammarResult, []SchemaResult, error) {
	in, err := json.Marshal(map[string]any{"grammars": grammars, "schemas": schemas})
	if err != nil {
		return nil, nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(r.node, filepath.Join(r.root, script))
	cmd.Dir = r.root
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("node %s: %w: %s", script, err, &stderr)
	}
	// node-llama-cpp may log before the result: it is the last line.
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var res struct {
		Grammars []GrammarResult `json:"grammars"`
		Schemas  []SchemaResult  `json:"schemas"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("node %s printed %q: %w (stderr: %s)", script, stdout.String(), err, &stderr)
	}
	if len(res.Grammars) != len(grammars) || len(res.Schemas) != len(schemas) {
		return nil, nil, fmt.Errorf("node %s: %d and %d results for %d grammars and %d schemas",
			script, len(res.Grammars), len(res.Schemas), len(grammars), len(schemas))
	}
	reasons := parserReasons(stderr.String())
	for i, g := range res.Grammars {
		if g.Error != "" && reasons[i] != "" {
			res.Grammars[i].Error += ": " + reasons[i]
		}
		if g.Error == "" && len(g.Accepts) != len(grammars[i].Texts) {
			return nil, nil, fmt.Errorf("node %s: grammar %d: %d verdicts for %d texts", script, i, len(g.Accepts), len(grammars[i].Texts))
		}
	}
	for i, s := range res.Schemas {
		if s.Error == "" && len(s.Valid) != len(schemas[i].Texts) {
			return nil, nil, fmt.Errorf("node %s: schema %d: %d verdicts for %d texts", script, i, len(s.Valid), len(schemas[i].Texts))
		}
	}
	return res.Grammars, res.Schemas, nil
}

// marker precedes, on the script's stderr, what llama.cpp printed while
// parsing grammar N.
const marker = "@@grammarref job "

// parserReasons splits the script's stderr by job: the lines llama.cpp's
// parser printed for each grammar.
func parserReasons(stderr string) map[int]string {
	reasons := map[int]string{}
	job := -1
	for _, line := range strings.Split(stderr, "\n") {
		if n, ok := strings.CutPrefix(line, marker); ok {
			job, _ = strconv.Atoi(n)
			continue
		}
		if line = strings.TrimSpace(line); job >= 0 && line != "" {
			if reasons[job] != "" {
				reasons[job] += "; "
			}
			reasons[job] += line
		}
	}
	return reasons
}
