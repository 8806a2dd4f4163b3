// Package openai turns OpenAI-shaped requests into engine calls and the
// engine's output into OpenAI's replies, the same way for every host: the
// HTTP API (httpapi, natively and at the edge) and the page's
// chat.completions (jsbridge). It reads a chat reply as OpenAI's clients
// expect it: the reasoning apart (llama.cpp's reasoning_content), the tool
// calls parsed out in the prompt's tool format with ids the server gives
// them, streamed or whole (Reply, ReplyStream).
//
// It knows no transport: no net/http, no JavaScript, no files.
package openai
