// Command wasmlm runs language models from the command line: generate text,
// embed texts or rank documents, tokenize, and describe a model. With no -m flag it uses the embedded
// default model (stories260K), so it works on a fresh clone with nothing to
// download.
//
//	wasmlm generate [-m MODEL] [-tokenizer TOK] [-p PROMPT] [-n MAX] [-temp T] [-top-k K]
//	                [-top-p P] [-min-p P] [-repeat-penalty R] [-seed S] [-stop STR ...]
//	                [-kv-type auto|f16|f32] [-json]
//	wasmlm embed [-m MODEL] [-tokenizer TOK] [-truncate] [-raw] [-threads N] TEXT... (- : stdin's lines)
//	wasmlm rerank [-m MODEL] [-tokenizer TOK] -query Q [-top-n N] [-truncate] [-threads N] DOC...
//	wasmlm tokenize [-m MODEL] [-tokenizer TOK] [-no-bos] [-special] TEXT
//	wasmlm info [-m MODEL] [-tokenizer TOK]
//	wasmlm serve [-m MODEL] [-addr 127.0.0.1:8080] [-web DIR] [-slots N] [-queue N] [-kv-type T] [-cors ORIGIN] ...
//	wasmlm bench [-m MODEL ...] [-prompt N] [-n N] [-kv-type T] [-json]   (or -gen DIR: write the benchmark's models)
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // the command line is wrong
)

// main runs the command line. SIGINT (Ctrl-C) and SIGTERM (kill, docker
// stop, systemd) end the command's context, which stops it cleanly (serve:
// gracefully); a second signal ends the process at once.
func main() {
	switch v := os.Getenv("WASMLM_SIMD"); v {
	case "off":
		tensor.SetNativeSIMD(false) // the pure-Go kernels (natively; in WebAssembly the runner reads it)
	case "", "on", "relaxed": // relaxed: WebAssembly's relaxed-SIMD kernels, which the runner chooses
	default:
		fmt.Fprintf(os.Stderr, "wasmlm: WASMLM_SIMD=%q: it takes off (the pure-Go kernels), on or relaxed\n", v)
		os.Exit(exitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the signals' default action again: a second one kills
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: wasmlm <command> [flags]

commands:
  generate   stream a completion of a prompt
  embed      print texts' embeddings as JSON
  rerank     print documents' relevance to a query as JSON (a reranker model)
  tokenize   print a text's token ids as JSON
  info       print model metadata as JSON
  serve      serve the HTTP API and the web page
  bench      measure load, time to first token, prefill and decode speed, peak memory
  split      write a GGUF model as parts of a bounded size (llama-gguf-split's files)

Run "wasmlm <command> -h" for a command's flags.
`

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"generate": runGenerate,
		"embed":    runEmbed,
		"rerank":   runRerank,
		"tokenize": runTokenize,
		"info":     runInfo,
		"serve":    runServe,
		"bench":    runBench,
		"split":    runSplit,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "wasmlm: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cmd(ctx, args[1:], stdout, stderr)
}
