package embedref

import (
	"encoding/json"
	"errors"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// The golden file of llama.cpp's embeddings (engine/testdata/
// llamacpp_embeddings.json): what llama.cpp made of the parity inputs with
// each parity model, which the engine's tests hold every platform to
// (natively, in wasm under Node, in Chromium) without running llama.cpp.
// It builds in every GOOS: the wasm tests read it too.

// Golden is the golden file: one case per model.
type Golden struct {
	Cases []GoldenCase `json:"cases"`
}

// GoldenCase is one model and what llama.cpp made of its inputs.
type GoldenCase struct {
	Name string `json:"name"`
	// The model: Spec built by modelgen, or (Default) the default model;
	// Pooling, when not 0, is written into its file's <arch>.pooling_type.
	Spec    *modelgen.Spec `json:"spec,omitempty"`
	Default bool           `json:"default,omitempty"`
	Pooling uint32         `json:"pooling,omitempty"`

	Texts   []string    `json:"texts,omitempty"`
	Tokens  [][]int     `json:"tokens,omitempty"`  // llama.cpp's ids of each text
	Vectors [][]float32 `json:"vectors,omitempty"` // llama.cpp's pooled vectors, not normalised

	Query     string    `json:"query,omitempty"` // a reranker's
	Documents []string  `json:"documents,omitempty"`
	PairTexts [][]int   `json:"pair_tokens,omitempty"` // llama.cpp's ids of each (query, document)
	Scores    []float32 `json:"scores,omitempty"`      // llama.cpp's raw scores (its classifier's first output)
	// ScoreTolerance is the largest difference allowed between a score
	// and llama.cpp's (logits of about ±1 here): a Q8_0 model's
	// activations are rounded to 8 bits, and an activation a last bit
	// away from llama.cpp's can round to the next step.
	ScoreTolerance float32 `json:"score_tolerance,omitempty"`
}

// Model builds the case's model.
func (c GoldenCase) Model() ([]byte, error) {
	var data []byte
	if c.Default {
		data = append([]byte(nil), models.Default()...)
	} else {
		var err error
		if data, err = modelgen.Build(*c.Spec); err != nil {
			return nil, err
		}
	}
	if c.Pooling == 0 {
		return data, nil
	}
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, err
	}
	arch, err := f.String("general.architecture")
	if err != nil {
		return nil, err
	}
	return modelgen.SetKV(data, arch+".pooling_type", gguf.ValueOf(c.Pooling))
}

// ParseGolden reads a golden file's bytes.
func ParseGolden(data []byte) (Golden, error) {
	var g Golden
	if err := json.Unmarshal(data, &g); err != nil {
		return Golden{}, err
	}
	if len(g.Cases) == 0 {
		return Golden{}, errors.New("embedref: the golden file has no cases")
	}
	return g, nil
}
