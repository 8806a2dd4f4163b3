// Package policy is what every host (the CLI, the HTTP API, the page's
// binding) decides the same way above the engine: the chat prompt a
// model's template makes of a conversation (ChatPrompt), the grammar a
// response format, a GBNF grammar or a forced tool call holds the reply to
// (Grammars, compiled once per model and bound to its vocabulary as an
// engine.Constraint), and the code of every error a host meets (CodeOf).
//
// The engine knows none of it: it generates from an engine.Prompt under an
// engine.Constraint. Like the engine, this package takes values and
// returns errors: no files, no HTTP, no JavaScript.
package policy
