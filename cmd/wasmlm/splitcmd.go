package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// runSplit writes a GGUF model as the parts llama-gguf-split --split writes,
// so that each fits where a file's size is bounded (Cloudflare's static
// assets take files of up to 25 MiB; an R2 object can be larger).
func runSplit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("split", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: wasmlm split [-max-size N | -max-tensors N] MODEL.gguf PREFIX

Writes MODEL.gguf (or a split set, named by its first part) as
PREFIX-00001-of-0000N.gguf and the parts after it, the files llama-gguf-split
--split writes: each part's tensor data at most -max-size bytes (K, M, G are
powers of 1000, as llama-gguf-split reads them) or at most -max-tensors
tensors. The first part's metadata does not count towards -max-size: for
Cloudflare's static assets (25 MiB a file) -max-size 24M leaves room.

`)
		fs.PrintDefaults()
	}
	maxSize := fs.String("max-size", "", "the most bytes of tensor data in a part, e.g. 24M")
	maxTensors := fs.Int("max-tensors", 0, "the most tensors in a part")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return exitUsage
	}
	opts, err := splitOptions(*maxSize, *maxTensors)
	if err != nil {
		fmt.Fprintf(stderr, "split: %v\n", err)
		return exitUsage
	}
	model, prefix := fs.Arg(0), strings.TrimSuffix(fs.Arg(1), ".gguf")
	data, err := readModel(model)
	if err != nil {
		fmt.Fprintf(stderr, "split: %v\n", err)
		return exitError
	}
	f, err := gguf.Parse(data)
	if err != nil {
		fmt.Fprintf(stderr, "split: %s: %v\n", model, err)
		return exitError
	}
	parts, err := gguf.BuilderOf(f).SplitBytes(opts)
	if err != nil {
		fmt.Fprintf(stderr, "split: %s: %v\n", model, err)
		return exitError
	}
	for i, p := range parts {
		name := gguf.SplitPath(prefix, i+1, len(parts))
		if err := os.WriteFile(name, p, 0o644); err != nil {
			fmt.Fprintf(stderr, "split: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "%s\t%d bytes\n", filepath.Clean(name), len(p))
	}
	return exitOK
}

// splitOptions reads -max-size and -max-tensors: exactly one of them.
func splitOptions(maxSize string, maxTensors int) (gguf.SplitOptions, error) {
	switch {
	case maxSize != "" && maxTensors != 0:
		return gguf.SplitOptions{}, fmt.Errorf("-max-size and -max-tensors: give one of them")
	case maxTensors < 0:
		return gguf.SplitOptions{}, fmt.Errorf("-max-tensors %d: give a positive count", maxTensors)
	case maxTensors > 0:
		return gguf.SplitOptions{MaxTensors: maxTensors}, nil
	case maxSize == "":
		return gguf.SplitOptions{}, fmt.Errorf("give -max-size (e.g. 24M) or -max-tensors")
	}
	n, err := parseByteSize(maxSize)
	if err != nil {
		return gguf.SplitOptions{}, fmt.Errorf("-max-size %q: %v", maxSize, err)
	}
	return gguf.SplitOptions{MaxBytes: n}, nil
}

// parseByteSize reads a count of bytes with an optional suffix K, M or G
// (powers of 1000, as llama-gguf-split's --split-max-size).
func parseByteSize(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1e3
	case "M":
		mult = 1e6
	case "G":
		mult = 1e9
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("a positive number of bytes, with K, M or G after it if you like")
	}
	return n * mult, nil
}
