//go:build !js

package grammarref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
)

// sampleScript is the Node.js program Sample runs, relative to the
// repository root.
const sampleScript = "internal/grammarref/sample.mjs"

// SampleJob asks llama.cpp for a completion of Prompt under Grammar (GBNF)
// for each of Seeds.
type SampleJob struct {
	Grammar     string   `json:"grammar"`
	Prompt      string   `json:"prompt"`
	Seeds       []uint32 `json:"seeds"`
	MaxTokens   int      `json:"maxTokens"`
	Temperature float64  `json:"temperature"`
}

// SampleResult is what llama.cpp sampled: Texts[i] for Seeds[i], Ended[i]
// whether it ended with an end-of-generation token (else at MaxTokens).
type SampleResult struct {
	Texts []string `json:"texts"`
	Ended []bool   `json:"ended"`
}

// Sample has llama.cpp sample every job from the GGUF model at modelPath,
// in one Node.js process (a context of 512 tokens).
func (r *Runner) Sample(modelPath string, jobs []SampleJob) ([]SampleResult, error) {
	in, err := json.Marshal(map[string]any{"model": modelPath, "jobs": jobs})
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(r.node, filepath.Join(r.root, sampleScript))
	cmd.Dir = r.root
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node %s: %w: %s", sampleScript, err, &stderr)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var res struct {
		Jobs []SampleResult `json:"jobs"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("node %s printed %q: %w (stderr: %s)", sampleScript, stdout.String(), err, &stderr)
	}
	if len(res.Jobs) != len(jobs) {
		return nil, fmt.Errorf("node %s: %d results for %d jobs", sampleScript, len(res.Jobs), len(jobs))
	}
	for i, j := range res.Jobs {
		if len(j.Texts) != len(jobs[i].Seeds) || len(j.Ended) != len(jobs[i].Seeds) {
			return nil, fmt.Errorf("node %s: job %d: %d texts for %d seeds", sampleScript, i, len(j.Texts), len(jobs[i].Seeds))
		}
	}
	return res.Jobs, nil
}
