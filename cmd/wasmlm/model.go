package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/wasmlm/wasmlm/cmd/internal/servecli"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// modelFlags are the flags every command uses to choose a model.
type modelFlags struct {
	path      string
	tokenizer string
	fs        *flag.FlagSet // where a download is reported (its output); nil: nowhere
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	m.fs = fs
	fs.StringVar(&m.path, "m", "", "model file: GGUF (of a split model, its first part: name-00001-of-0000N.gguf), llama2.c checkpoint, or hf:owner/repo/file.gguf[@revision], downloaded from Hugging Face (HF_ENDPOINT) into the cache once (default: the embedded "+models.DefaultName+")")
	fs.StringVar(&m.tokenizer, "tokenizer", "", "llama2.c tokenizer.bin (needed with a llama2.c checkpoint)")
}

// load reads the chosen model, or the embedded default.
func (m *modelFlags) load() (*engine.Model, error) {
	if m.path == "" {
		if m.tokenizer != "" {
			return nil, fmt.Errorf("-tokenizer needs -m: the default model has its own tokenizer")
		}
		return engine.Load(models.Default(), engine.LoadOptions{})
	}
	path := m.path
	if isHF(path) {
		log := io.Discard
		if m.fs != nil {
			log = m.fs.Output()
		}
		var err error
		if path, err = fetchHF(context.Background(), m.path, log); err != nil {
			return nil, err
		}
	}
	data, err := readModel(path)
	if err != nil {
		return nil, err
	}
	var opts engine.LoadOptions
	if m.tokenizer != "" {
		if opts.Tokenizer, err = os.ReadFile(m.tokenizer); err != nil {
			return nil, err
		}
	}
	model, err := engine.Load(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w%s", m.path, err, splitHint(path, data))
	}
	return model, nil
}

// kvTypeFlag registers -kv-type, the KV cache type of the sessions a
// command makes.
func kvTypeFlag(fs *flag.FlagSet) *engine.KVType { return servecli.KVTypeFlag(fs) }

// threadsFlag registers -threads, how many threads the sessions a command
// makes split their matrix products among.
func threadsFlag(fs *flag.FlagSet) *int {
	return fs.Int("threads", 0, fmt.Sprintf("threads for the matrix products, `N` (0: every core, %d here; the results are the same whatever it is)", runtime.GOMAXPROCS(0)))
}

// parseFlags parses args, reporting usage errors on stderr; ok is false when
// the command should exit with code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK, false
		}
		return exitUsage, false
	}
	return 0, true
}
