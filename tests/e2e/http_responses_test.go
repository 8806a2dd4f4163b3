//go:build !js

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// responsesResult is what openai_responses_client.mjs prints.
type responsesResult struct {
	Text struct {
		Status     string   `json:"status"`
		OutputText string   `json:"output_text"`
		Types      []string `json:"types"`
		// ItemStatuses are the output items' statuses.
		ItemStatuses []string `json:"item_statuses"`
		Usage        struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	} `json:"text"`
	Stream struct {
		Events     []string `json:"events"`
		Deltas     string   `json:"deltas"`
		OutputText string   `json:"output_text"`
		Status     string   `json:"status"`
		// ItemsDone are the statuses of the output_item.done events' items,
		// ItemStatuses the final response's items'.
		ItemsDone    []string `json:"items_done"`
		ItemStatuses []string `json:"item_statuses"`
	} `json:"stream"`
	JSONSchema struct {
		OutputText string `json:"output_text"`
		Parsed     *struct {
			Name *string `json:"name"`
			Age  *int    `json:"age"`
		} `json:"parsed"`
		Status string `json:"status"`
	} `json:"json_schema"`
	Call       responsesCall `json:"call"`
	CallStream struct {
		responsesCall
		Events   []string `json:"events"`
		ArgsDone []string `json:"args_done"`
	} `json:"call_stream"`
	Answer struct {
		Types      []string `json:"types"`
		OutputText string   `json:"output_text"`
	} `json:"answer"`
	ChatLogprobs struct {
		Content []tokenLogprob `json:"content"`
	} `json:"chat_logprobs"`
	ResponseLogprobs   []tokenLogprob `json:"response_logprobs"`
	CompletionLogprobs struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	} `json:"completion_logprobs"`
	Previous struct {
		Error *clientError `json:"error"`
	} `json:"previous"`
	Store struct {
		Error *clientError `json:"error"`
	} `json:"store"`
}

// tokenLogprob is a token's log-probability as chat and the Responses API
// write it.
type tokenLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	} `json:"top_logprobs"`
}

// responsesCall is a function_call item as the script prints it.
type responsesCall struct {
	Types     []string `json:"types"`
	Name      string   `json:"name"`
	CallID    string   `json:"call_id"`
	Arguments string   `json:"arguments"`
}

// checkResponses checks what the openai client made of the Responses API:
// a text cut by max_output_tokens (incomplete), the same text streamed
// through responses.stream() with the whole event sequence, JSON the
// client's parse helper reads for its schema, a forced function call (the
// same streamed, its arguments' done event fired) sent back with its
// output for a text answer, logprobs in chat's, the Responses API's and
// completions' shapes, and previous_response_id and store: true
// refused as BadRequestError naming the field.
func checkResponses(t *testing.T, r responsesResult) {
	t.Helper()
	assert.Equal(t, "incomplete", r.Text.Status, "max_output_tokens cut the story")
	assert.Equal(t, []string{"message"}, r.Text.Types)
	assert.Equal(t, []string{"incomplete"}, r.Text.ItemStatuses, "the message max_output_tokens cut")
	assert.NotEmpty(t, r.Text.OutputText)
	assert.Equal(t, 8, r.Text.Usage.OutputTokens)
	assert.Equal(t, r.Text.Usage.InputTokens+8, r.Text.Usage.TotalTokens)

	events := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	for range r.Text.Usage.OutputTokens {
		events = append(events, "response.output_text.delta") // stories260K's tokens are whole characters
	}
	events = append(events, "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete")
	assert.Equal(t, events, r.Stream.Events)
	assert.Equal(t, r.Text.OutputText, r.Stream.Deltas)
	assert.Equal(t, r.Text.OutputText, r.Stream.OutputText)
	assert.Equal(t, "incomplete", r.Stream.Status)
	assert.Equal(t, []string{"incomplete"}, r.Stream.ItemsDone, "output_item.done's message")
	assert.Equal(t, []string{"incomplete"}, r.Stream.ItemStatuses, "the final response's message")

	require.NotNil(t, r.JSONSchema.Parsed, "parsed: %q", r.JSONSchema.OutputText)
	assert.NotNil(t, r.JSONSchema.Parsed.Name)
	assert.NotNil(t, r.JSONSchema.Parsed.Age)
	assert.Equal(t, "completed", r.JSONSchema.Status)

	assert.Equal(t, []string{"function_call"}, r.Call.Types)
	assert.Equal(t, "get_time", r.Call.Name)
	assert.Regexp(t, `^call_[0-9A-Za-z]{24}$`, r.Call.CallID)
	assert.JSONEq(t, `{}`, r.Call.Arguments)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}, r.CallStream.Events)
	assert.Equal(t, []string{r.Call.Arguments}, r.CallStream.ArgsDone)
	assert.Equal(t, r.Call, responsesCall{Types: r.Call.Types, Name: r.CallStream.Name, CallID: r.CallStream.CallID, Arguments: r.CallStream.Arguments},
		"streamed: the same call (same seed, same id)")
	assert.Equal(t, []string{"message"}, r.Answer.Types)
	assert.NotEmpty(t, r.Answer.OutputText)

	require.Len(t, r.ChatLogprobs.Content, 4)
	for _, e := range r.ChatLogprobs.Content {
		require.Len(t, e.TopLogprobs, 3)
		assert.Equal(t, e.TopLogprobs[0].Logprob, e.Logprob, "greedy: the most likely")
	}
	assert.Equal(t, r.ChatLogprobs.Content, r.ResponseLogprobs, "instructions and a developer message are one system message: the same prompt")
	c := r.CompletionLogprobs
	require.Len(t, c.Tokens, 4)
	assert.Len(t, c.TokenLogprobs, 4)
	assert.Len(t, c.TopLogprobs, 4)
	assert.Equal(t, 0, c.TextOffset[0])
	assert.Equal(t, c.TopLogprobs[0][c.Tokens[0]], c.TokenLogprobs[0], "greedy: the most likely")

	for param, e := range map[string]*clientError{"previous_response_id": r.Previous.Error, "store": r.Store.Error} {
		if assert.NotNil(t, e, param) {
			assert.Equal(t, "BadRequestError", e.Name)
			assert.Equal(t, param, deref(e.Param))
		}
	}
}

// TestHTTPServeResponses: `wasmlm serve` serves the unmodified openai
// client's responses.create and responses.stream().
func TestHTTPServeResponses(t *testing.T) {
	var r responsesResult
	runOpenAIScript(t, &r, "openai_responses_client.mjs", startServe(t).url+"/v1")
	checkResponses(t, r)
}

// TestWorkerResponses: the edge worker serves them too, byte for byte as
// the same handler natively.
func TestWorkerResponses(t *testing.T) {
	var r, n responsesResult
	out := runOpenAIScript(t, &r, "openai_responses_client.mjs", edgeWorker(t).url+"/v1")
	checkResponses(t, r)
	native := runOpenAIScript(t, &n, "openai_responses_client.mjs", nativeServer(t).URL+"/v1")
	assert.JSONEq(t, string(native), string(out), "the edge worker's responses are the native handler's")
}
