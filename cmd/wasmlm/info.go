package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/wasmlm/wasmlm/engine"
)

func runInfo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "info: unexpected argument %q (the model goes in -m)\n", fs.Arg(0))
		return exitUsage
	}
	model, err := mf.load()
	if err != nil {
		fmt.Fprintf(stderr, "info: %v\n", err)
		return exitError
	}
	// The model's metadata, and the KV cache type its sessions get by
	// default (-kv-type auto).
	out := struct {
		engine.Info
		KVType engine.KVType `json:"kv_type"`
	}{model.Info(), model.DefaultKVType()}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "info: %v\n", err)
		return exitError
	}
	return exitOK
}
