// Package openai turns OpenAI-shaped requests into engine calls and the
// engine's output into OpenAI's replies, the same way for every host: the
// HTTP API (httpapi, natively and at the edge, and the page's lm.serve)
// and the page's chat.completions (jsbridge).
//
// A request is decoded (Decode, CompletionRequest, ChatRequest) and made a
// Job by an API over one model (API.CompletionJob, API.ChatJob): its
// fields checked strictly, every error an *Error naming the field
// (param), OpenAI's defaults filled in, the chat prompt rendered with the
// request's tools and template options, its grammar (response_format,
// grammar, a forced tool call) compiled. The answer is a Completion
// (NewCompletion) or, streamed, the chunks of a Stream in OpenAI's order.
// A chat reply is read as OpenAI's clients expect it: the reasoning apart
// (llama.cpp's reasoning_content), the tool calls parsed out in the
// prompt's tool format with ids the server gives them (Reply,
// ReplyStream). The Responses API's requests are read as the chat
// requests they stand for (ResponsesRequest, API.ResponsesJob) and
// answered as a Response or its typed events (NewResponse,
// ResponseStream).
//
// It knows no transport: no net/http, no JavaScript, no files.
package openai
