package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/wasmlm/wasmlm/tokenizer"
)

func runTokenize(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	noBOS := fs.Bool("no-bos", false, "do not add the BOS token the vocabulary asks for")
	special := fs.Bool("special", false, "parse special-token text such as <s> into those tokens")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	text := strings.Join(fs.Args(), " ")
	model, err := mf.load()
	if err != nil {
		fmt.Fprintf(stderr, "tokenize: %v\n", err)
		return exitError
	}
	ids, err := model.Tokenizer().Encode(text, tokenizer.EncodeOptions{AddSpecial: !*noBOS, ParseSpecial: *special})
	if err != nil {
		fmt.Fprintf(stderr, "tokenize: %v\n", err)
		return exitError
	}
	if err := json.NewEncoder(stdout).Encode(nonNil(ids)); err != nil {
		fmt.Fprintf(stderr, "tokenize: %v\n", err)
		return exitError
	}
	return exitOK
}
