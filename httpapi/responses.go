package httpapi

import (
	"net/http"

	"github.com/wasmlm/wasmlm/openai"
)

// serveResponses serves POST /v1/responses, OpenAI's Responses API, as the
// chat completion it stands for (openai.API.ResponsesJob): the same
// admission, slots and generation, answered as a Response or, streamed,
// as the Responses API's typed events.
func (h *Handler) serveResponses(w http.ResponseWriter, r *http.Request) {
	h.serveJob(w, r, func(body []byte) (*job, *apiError) {
		if e := h.refuseKind(capCompletion); e != nil {
			return nil, e
		}
		req := &openai.ResponsesRequest{}
		if e := decodeJSON(body, req); e != nil {
			return nil, e
		}
		j, e := h.newJob("/v1/responses", "resp_", func() (*openai.Job, *openai.Error) { return h.api.ResponsesJob(req) })
		if j != nil {
			j.responses = req
		}
		return j, e
	})
}

// parallel is the response's parallel_tool_calls: the request's, true
// when it leaves it out.
func (j *job) parallel() bool {
	return j.responses == nil || j.responses.ParallelToolCalls == nil || *j.responses.ParallelToolCalls
}
