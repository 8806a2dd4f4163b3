//go:build !js

// Package llamacppref checks the engine against llama.cpp, the reference
// every architecture is held to: it writes random-weight GGUF models of any
// architecture with internal/modelgen, has llama.cpp (the npm package
// node-llama-cpp, pinned in package.json, its prebuilt CPU build on one
// thread) load them and continue a few prompts greedily, reporting the
// next-token probabilities, and compares the engine's tokens and
// probabilities with them (Check).
//
// A model llama.cpp refuses to load fails the check: that, more than the
// numbers, proves the tensor names, shapes and metadata keys the engine and
// modelgen use are those of real files.
//
// It runs Node.js, so it is test machinery for native builds only; the
// engine's tests implement Model over the engine (this package cannot
// import it: the engine's own tests use this package).
package llamacppref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// script is the Node.js program that runs llama.cpp, relative to the
// module's root: Node finds node-llama-cpp in the root's node_modules from
// the script's own directory.
const script = "internal/llamacppref/llamacpp_parity.mjs"

// KVType is the type of llama.cpp's KV cache, as ggml names it.
type KVType string

// The KV cache types a check can run with.
const (
	KVF32 KVType = "F32"
	KVF16 KVType = "F16" // llama.cpp's default
)

// Runner runs llama.cpp through node-llama-cpp: in one Node.js process,
// started by the first Run and shared by every Runner of the test binary
// (see server), so that the checks of a package pay node-llama-cpp's start
// once rather than once per check and per round.
type Runner struct{ node Node }

// Node is Node.js and the module's root, whose node_modules holds
// node-llama-cpp: what the harnesses that run llama.cpp run it with.
type Node struct {
	exe  string // the node executable
	root string // the module's root, where node_modules is
}

// Need returns a Runner when Node.js and the repository's node-llama-cpp
// (npm ci --omit=optional at the root; make test runs it) are installed.
// Otherwise it skips t, saying what is missing, or fails it in CI (the
// environment variable CI set), where both are installed.
func Need(t testing.TB) *Runner {
	t.Helper()
	return &Runner{node: NeedNode(t)}
}

// NeedNode returns Node.js and the module's root holding node-llama-cpp,
// for the harnesses that run llama.cpp (Need's, internal/embedref's). When
// either is missing it skips t, saying what is, or fails it in CI.
func NeedNode(t testing.TB) Node {
	t.Helper()
	n, err := FindNode()
	if err == nil {
		return n
	}
	if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	t.Skip(err)
	return Node{}
}

// FindNode locates Node.js and the module root holding node-llama-cpp
// (the nearest go.mod above the working directory), for a harness that is
// not a test (tools/benchrun); an error says what is missing.
func FindNode() (Node, error) {
	exe, err := exec.LookPath("node")
	if err != nil {
		return Node{}, errors.New("llama.cpp needs Node.js (Debian package nodejs)")
	}
	root, err := moduleRoot()
	if err != nil {
		return Node{}, err
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "node-llama-cpp", "package.json")); err != nil {
		return Node{}, errors.New("llama.cpp needs node-llama-cpp: run npm ci --omit=optional at the repository root (make test does)")
	}
	return Node{exe: exe, root: root}, nil
}

// RunJSON runs the Node.js program script (a path from the module's root)
// with req, as JSON, on its standard input, and decodes into res the last
// line it prints (node-llama-cpp may log before it).
func (n Node) RunJSON(script string, req, res any) error {
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(n.exe, filepath.Join(n.root, script))
	cmd.Dir = n.root
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("node %s: %w: %s", script, err, &stderr)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if err := json.Unmarshal(out, res); err != nil {
		return fmt.Errorf("node %s printed %q: %w (stderr: %s)", script, stdout.String(), err, &stderr)
	}
	return nil
}

// moduleRoot is the nearest directory above the working directory (a
// test's is its package's) that holds go.mod.
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
			return "", errors.New("llama.cpp: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Job is one model for llama.cpp to run.
type Job struct {
	Model   string  `json:"model"`   // the GGUF file's path
	Prompts [][]int `json:"prompts"` // token ids, each evaluated from an empty context
	Tokens  int     `json:"tokens"`  // greedy tokens to generate after each prompt
	TopK    int     `json:"top_k"`   // probabilities reported per step
	KVType  KVType  `json:"kv_type"`
	// Texts, when set, makes the job a tokenization instead: llama.cpp
	// loads the file's vocabulary only and tokenizes each text
	// (Output.Tokenized); Prompts and the rest are then unused.
	Texts []string `json:"texts,omitempty"`
	// ParseSpecial tokenizes Texts with parse_special true: the text of
	// special tokens becomes their ids.
	ParseSpecial bool `json:"parse_special,omitempty"`
	// Detokenize also renders each text's ids back to text with
	// llama_detokenize (Output.Detokenized).
	Detokenize bool `json:"detokenize,omitempty"`
}

// Output is llama.cpp's result for one job.
type Output struct {
	// Error is why llama.cpp refused the model (or failed to run it); the
	// other fields are then empty.
	Error        string `json:"error"`
	Architecture string `json:"architecture"` // general.architecture, as node-llama-cpp read it
	Tensors      int    `json:"tensors"`      // the tensors node-llama-cpp read
	Runs         []Run  `json:"runs"`         // one per prompt
	// Tokenized are a tokenization job's results: the ids of each text,
	// as llama_tokenize gives them with add_special false and
	// parse_special as Job.ParseSpecial says.
	Tokenized [][]int `json:"tokenized"`
	// Detokenized are, with Job.Detokenize, llama_detokenize's text of
	// each text's ids (remove_special and unparse_special false).
	Detokenized []string `json:"detokenized"`
	// Special is, for a tokenization job, what node-llama-cpp reports of
	// the vocabulary's special tokens.
	Special VocabSpecial `json:"special"`
}

// VocabSpecial is what node-llama-cpp says of a vocabulary's special tokens
// (its LlamaModelTokens): the ids, -1 for none (node-llama-cpp also gives
// none for a BOS or EOS that is not a control token, and for a SEP that is
// an unknown one), and llama_vocab_get_add_bos and _add_eos (both false when
// there is no BOS).
type VocabSpecial struct {
	BOS    int  `json:"bos"`
	EOS    int  `json:"eos"`
	SEP    int  `json:"sep"`
	AddBOS bool `json:"add_bos"`
	AddEOS bool `json:"add_eos"`
}

// Run is llama.cpp's greedy continuation of one prompt.
type Run struct {
	// Tokens are the greedy tokens after the prompt: Job.Tokens of them,
	// or fewer, up to (without) an end-of-generation token.
	Tokens []int `json:"tokens"`
	// Steps are, for each token chosen (Tokens, then the
	// end-of-generation token if one ended the run), the top Job.TopK
	// next-token probabilities, most probable first: Steps[0] are those
	// after the prompt.
	Steps [][]Prob `json:"steps"`
}

// Prob is one token's probability (JSON: [id, p]).
type Prob struct {
	Token int
	P     float64
}

// UnmarshalJSON reads [id, p].
func (p *Prob) UnmarshalJSON(b []byte) error {
	var pair [2]float64
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	p.Token, p.P = int(pair[0]), pair[1]
	return nil
}

// Run runs the jobs in the shared Node.js process, in order. An error is
// the process's failure (the next Run starts another); a model llama.cpp
// refuses is its Output's Error.
func (r *Runner) Run(jobs []Job) ([]Output, error) {
	var res struct {
		Results []Output `json:"results"`
	}
	if err := shared.call(r.node, map[string]any{"jobs": jobs}, &res); err != nil {
		return nil, err
	}
	if len(res.Results) != len(jobs) {
		return nil, fmt.Errorf("node %s: %d results for %d jobs", script, len(res.Results), len(jobs))
	}
	return res.Results, nil
}
