package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// What a model can be asked (modelMeta.Capabilities).
const (
	capCompletion = "completion"
	capEmbedding  = "embedding"
	capRerank     = "rerank"
)

// capabilities lists what m can be asked: a decoder generates and embeds;
// an encoder embeds or, a reranker, ranks.
func capabilities(m *engine.Model) []string {
	caps := []string{}
	if m.Generates() {
		caps = append(caps, capCompletion)
	}
	if m.Pooling() != engine.PoolingRank {
		caps = append(caps, capEmbedding)
	}
	if m.Reranks() {
		caps = append(caps, capRerank)
	}
	return caps
}

// refuseKind is the 400 for a request the model cannot serve (want is a
// capability it lacks): generation from an embedding model, embeddings
// from a reranker, ranking from any model but a reranker. It says what the
// model does instead.
func (h *Handler) refuseKind(want string) *apiError {
	caps := capabilities(h.model)
	if slices.Contains(caps, want) {
		return nil
	}
	var can []string
	for _, c := range caps {
		can = append(can, capabilityText(c))
	}
	verb := "rank documents (a reranker, a BERT cross-encoder such as ms-marco-MiniLM, does)"
	switch want {
	case capCompletion:
		verb = "generate text"
	case capEmbedding:
		verb = "embed text"
	}
	if len(can) == 0 {
		can = []string{"is served by none of this server's endpoints"}
	}
	return badRequest("model", "model_not_supported", "The model %s cannot %s: it %s.", h.name, verb, strings.Join(can, " and "))
}

// capabilityText says what a model with capability c does, and where.
func capabilityText(c string) string {
	switch c {
	case capCompletion:
		return "generates text (POST /v1/chat/completions, /v1/completions)"
	case capEmbedding:
		return "embeds text (POST /v1/embeddings)"
	}
	return "ranks documents for a query (POST /v1/rerank)"
}

// modelObject is OpenAI's model object, plus llama.cpp-style "meta".
type modelObject struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Created int64     `json:"created"`
	OwnedBy string    `json:"owned_by"`
	Meta    modelMeta `json:"meta"`
}

type modelMeta struct {
	Format        engine.Format `json:"format"`
	Architecture  string        `json:"architecture"`
	VocabSize     int           `json:"vocab_size"`
	ContextLength int           `json:"context_length"` // what a request can use: the session's
	// TrainedContextLength is the context the model was trained for (the
	// file's), named as llama.cpp's /v1/models meta names it: a longer
	// context_length (-ctx) runs past it.
	TrainedContextLength int           `json:"n_ctx_train"`
	KVType               engine.KVType `json:"kv_type"` // the sessions' KV cache type: f32 or f16
	Parameters           int64         `json:"parameters"`
	Slots                int           `json:"slots"`
	// Capabilities are what the model can be asked: "completion" (both
	// completion endpoints), "embedding", "rerank" (as llama.cpp's
	// /models lists them); EmbeddingLength is an embedding's values, and
	// Pooling how the tokens' states become one ("mean", "cls", "last",
	// "rank": a reranker's).
	Capabilities    []string `json:"capabilities"`
	EmbeddingLength int      `json:"embedding_length"`
	Pooling         string   `json:"pooling"`
	// SIMD says whether the matrix products run on SIMD kernels — the
	// SIMD128 ones in WebAssembly (the edge worker's do), natively the
	// assembly ones (tensor.NativeSIMD) — so a deployment can check; and
	// Threads how many threads each slot's products split among.
	SIMD    bool `json:"simd"`
	Threads int  `json:"threads"`
}

func (h *Handler) modelObject() modelObject {
	info := h.model.Info()
	return modelObject{
		ID: h.name, Object: "model", Created: h.created, OwnedBy: "wasmlm",
		Meta: modelMeta{
			Format: info.Format, Architecture: info.Architecture, VocabSize: info.VocabSize,
			ContextLength: h.context, TrainedContextLength: info.ContextLength, KVType: h.kvType, Parameters: info.Parameters, Slots: max(h.opts.Slots, 1),
			SIMD: tensor.SIMD() || tensor.NativeSIMD(), Threads: h.threads,
			Capabilities: capabilities(h.model), EmbeddingLength: h.model.EmbeddingLength(), Pooling: h.model.Pooling().String(),
		},
	}
}

func (h *Handler) serveModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelObject{h.modelObject()}})
}

// serveModel is GET /v1/models/{id}: the loaded model, or 404.
func (h *Handler) serveModel(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	if id != h.name {
		writeError(w, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, param: "model", code: "model_not_found",
			message: fmt.Sprintf("The model %q does not exist; this server serves %q", id, h.name)})
		return
	}
	writeJSON(w, http.StatusOK, h.modelObject())
}
