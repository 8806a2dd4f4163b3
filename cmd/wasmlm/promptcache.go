package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wasmlm/wasmlm/engine"
)

// generate -prompt-cache FILE, as llama.cpp's --prompt-cache: the session
// starts from the state FILE holds (engine.Session.LoadState), so a prompt
// that begins with the cached one evaluates only what follows it, and one
// equal to it nothing at all; once the prompt is evaluated, the state is
// saved to FILE (unless FILE held that very prompt already). A FILE of
// another model, KV type or a larger context, or a corrupt one, is an
// error: delete it to start over.

// loadPromptCache restores session from path; a missing file is an empty
// cache.
func loadPromptCache(session *engine.Session, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := session.LoadState(bufio.NewReaderSize(f, 1<<20)); err != nil {
		return fmt.Errorf("%w (delete %s to start over)", err, path)
	}
	return nil
}

// cachePrompt evaluates prompt in session (a generation of one token,
// which is discarded) and, if that evaluated any token, saves the state
// to path: to a temporary file renamed over path, so that a failed save
// leaves the cache as it was. It returns what the evaluation took.
func cachePrompt(ctx context.Context, session *engine.Session, prompt string, parseSpecial bool, path string) (engine.Timings, error) {
	res, err := session.Generate(ctx, prompt, engine.GenerateOptions{MaxTokens: 1, ParseSpecial: parseSpecial}, nil)
	if err != nil || res.FinishReason == engine.FinishAbort || res.Timings.PrefillTokens == 0 {
		return res.Timings, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return res.Timings, err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = session.SaveState(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return res.Timings, err
}
