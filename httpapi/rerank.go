package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// rerankRequest is POST /v1/rerank (also /rerank, /v1/reranking and
// /reranking), as llama.cpp's server takes it (its Jina-style form; TEI's,
// with "texts", is not served). Documents are strings. ReturnDocuments is
// Jina's and Cohere's (llama.cpp returns none); Truncate is this server's,
// as for embeddings: it cuts a document to fit the context with the query.
type rerankRequest struct {
	Model           string          `json:"model"`
	Query           json.RawMessage `json:"query"`
	Documents       json.RawMessage `json:"documents"`
	TopN            *int            `json:"top_n"`
	ReturnDocuments bool            `json:"return_documents"`
	Truncate        bool            `json:"truncate"`
}

// rerankJob is what a rerank adds to an embedJob.
type rerankJob struct {
	query           string
	queryTokens     int // the query's own tokens (no special ones)
	topN            int // results to return: top_n, at most the documents
	returnDocuments bool
}

// rerankResponse is llama.cpp's format_response_rerank: the model, the
// tokens evaluated, and the documents' scores, best first.
type rerankResponse struct {
	Model   string         `json:"model"`
	Object  string         `json:"object"`
	Usage   embeddingUsage `json:"usage"`
	Results []rerankResult `json:"results"`
}

type rerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float32 `json:"relevance_score"` // the classifier's logit, as llama.cpp reports it
	// Document is the document's text when return_documents is true
	// ({"text": ...}, as Jina's and Cohere's APIs return it).
	Document *rerankDocument `json:"document,omitempty"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

func (h *Handler) serveRerank(w http.ResponseWriter, r *http.Request) {
	h.serveEmbedJob(w, r, "documents", capRerank, func(body []byte) (*embedJob, *apiError) {
		var req rerankRequest
		if e := decodeJSON(body, &req); e != nil {
			return nil, e
		}
		return h.rerankJob(&req)
	})
}

// rerankJob checks a rerank request. A query that alone fills the context
// (without the pair's special tokens) is refused here; one that leaves a
// document too little room is the engine's to refuse, naming documents.
func (h *Handler) rerankJob(req *rerankRequest) (*embedJob, *apiError) {
	if openai.IsNull(req.Query) {
		return nil, badRequest("query", "missing_required_parameter", "query is required: the text the documents are ranked for")
	}
	raw := bytes.TrimSpace(req.Query)
	if raw[0] != '"' {
		return nil, badRequest("query", "invalid_type", "query must be a string, got %s", openai.Describe(raw))
	}
	query, e := readText(raw, "query", "query")
	if e != nil {
		return nil, e
	}
	docs, e := readTexts(req.Documents, "documents", false)
	if e != nil {
		return nil, e
	}
	j := &embedJob{texts: docs, opts: engine.EmbedOptions{Truncate: req.Truncate},
		rerank: &rerankJob{query: query, topN: len(docs), returnDocuments: req.ReturnDocuments}}
	if n := req.TopN; n != nil {
		if *n < 1 {
			return nil, badRequest("top_n", "invalid_value", "top_n = %d, must be >= 1 (more than the documents returns them all)", *n)
		}
		j.rerank.topN = min(*n, len(docs))
	}
	if e := h.textFitsAlone(len(query), "query", "the query"); e != nil {
		return nil, e
	}
	ids, err := h.model.Tokenizer().Encode(query, tokenizer.EncodeOptions{})
	if err != nil {
		return nil, generationError(err, "query")
	}
	if len(ids) >= h.context {
		return nil, badRequest("query", "context_length_exceeded",
			"This model's maximum context length is %d tokens, and the query is %d tokens: no room is left for a document.", h.context, len(ids))
	}
	j.rerank.queryTokens = len(ids)
	if !req.Truncate {
		for i, d := range docs {
			name := fmt.Sprintf("documents[%d]", i)
			if e := h.textFitsAlone(len(d), name, name); e != nil {
				return nil, e
			}
		}
	}
	return j, nil
}

// rerankResponse orders the scores as llama.cpp does, best first (ties in
// the documents' order), and keeps the top_n.
func (h *Handler) rerankResponse(j *embedJob, scores []engine.Score) rerankResponse {
	order, tokens := make([]int, len(scores)), 0
	for i, s := range scores {
		order[i] = i
		tokens += s.Tokens
	}
	// A sort of the indices: its instance is the one other []int sorts
	// link already, where one of the results would add 9 KB to the edge
	// worker.
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case scores[a].Value > scores[b].Value:
			return -1
		case scores[a].Value < scores[b].Value:
			return 1
		}
		return a - b
	})
	resp := rerankResponse{Model: h.name, Object: "list", Usage: embeddingUsage{PromptTokens: tokens, TotalTokens: tokens},
		Results: make([]rerankResult, j.rerank.topN)}
	for k := range resp.Results {
		i := order[k]
		resp.Results[k] = rerankResult{Index: i, RelevanceScore: scores[i].Value}
		if j.rerank.returnDocuments {
			resp.Results[k].Document = &rerankDocument{Text: j.texts[i]}
		}
	}
	return resp
}
