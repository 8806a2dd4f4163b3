package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// embedJSON is what embed prints: the shape of /v1/embeddings' data and
// usage.
type embedJSON struct {
	Data  []embeddingJSON `json:"data"`
	Usage embedUsageJSON  `json:"usage"`
}

type embeddingJSON struct {
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
	Truncated bool      `json:"truncated,omitempty"` // cut to fit the context (-truncate)
}

type embedUsageJSON struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// rerankJSON is what rerank prints: /v1/rerank's results (best first) and
// usage.
type rerankJSON struct {
	Results []rerankResultJSON `json:"results"`
	Usage   embedUsageJSON     `json:"usage"`
}

type rerankResultJSON struct {
	Index          int     `json:"index"`
	RelevanceScore float32 `json:"relevance_score"`
}

// stdinTexts is the argument that reads texts from standard input.
const stdinTexts = "-"

func runEmbed(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runEmbedding(ctx, "embed", args, os.Stdin, stdout, stderr)
}

func runRerank(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runEmbedding(ctx, "rerank", args, os.Stdin, stdout, stderr)
}

// runEmbedding is embed (the texts' embeddings) and rerank (the documents'
// scores for -query): one JSON object on stdout.
func runEmbedding(ctx context.Context, cmd string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	truncate := fs.Bool("truncate", false, "cut a text longer than the context to fit (rerank: the document), rather than fail")
	threads := threadsFlag(fs)
	var (
		raw   *bool
		query *string
		topN  *int
	)
	if cmd == "embed" {
		raw = fs.Bool("raw", false, "print the embeddings as pooled, not scaled to unit length")
	} else {
		query = fs.String("query", "", "the query the documents are ranked for (required)")
		topN = fs.Int("top-n", 0, "print the N best documents only (0: all)")
	}
	fs.Usage = func() {
		what := "TEXT... (- reads texts from stdin, one a line)"
		if cmd == "rerank" {
			what = "-query Q DOC... (- reads documents from stdin, one a line)"
		}
		fmt.Fprintf(stderr, "usage: wasmlm %s [flags] %s\n", cmd, what)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	texts, err := readTextArgs(fs.Args(), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	switch {
	case len(texts) == 0:
		fmt.Fprintf(stderr, "%s: no %s given (arguments, or - to read them from stdin, one a line)\n", cmd, map[bool]string{true: "texts", false: "documents"}[cmd == "embed"])
		return exitUsage
	case cmd == "rerank" && !flagGiven(fs, "query"):
		fmt.Fprintln(stderr, "rerank: -query is required")
		return exitUsage
	case topN != nil && *topN < 0:
		fmt.Fprintf(stderr, "rerank: -top-n must be >= 0 (0: all), got %d\n", *topN)
		return exitUsage
	}
	model, err := mf.load()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	session, err := model.NewSession(engine.SessionOptions{Threads: *threads})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", cmd, flagError(err))
		return exitUsage
	}
	opts := engine.EmbedOptions{Truncate: *truncate}
	var out any
	if cmd == "embed" {
		opts.Raw = *raw
		out, err = embedTexts(ctx, session, texts, opts)
	} else {
		out, err = rerankTexts(ctx, session, *query, texts, *topN, opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", cmd, textError(err, cmd, len(texts)))
		if cmd == "rerank" && mf.path == "" && errors.Is(err, engine.ErrUnsupported) {
			fmt.Fprintf(stderr, "rerank: the default model (%s) generates text; give a reranker with -m (wasmlm bench -gen DIR -shapes minilm-l6-rerank writes a random-weight one to try)\n", models.DefaultName)
		}
		if errors.Is(err, engine.ErrInvalidOption) {
			return exitUsage
		}
		return exitError
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	return exitOK
}

// embedTexts embeds texts, in embed's output shape.
func embedTexts(ctx context.Context, s *engine.Session, texts []string, opts engine.EmbedOptions) (embedJSON, error) {
	embs, err := s.Embed(ctx, texts, opts)
	if err != nil {
		return embedJSON{}, err
	}
	out := embedJSON{Data: make([]embeddingJSON, len(embs))}
	for i, e := range embs {
		out.Data[i] = embeddingJSON{Index: i, Embedding: e.Vector, Truncated: e.Truncated}
		out.Usage.PromptTokens += e.Tokens
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return out, nil
}

// tooLongTexts matches the engine's names of a text too long for the
// context: input[i] (of several) or documents[i].
var tooLongTexts = regexp.MustCompile(`\b(input|documents)\[(\d+)\]`)

// tooLongError is the engine's message for a text too long in the CLI's
// words: texts and documents counted from 1 as the arguments are (text 2,
// document 3), and the -truncate flag.
func tooLongError(msg string, n int) string {
	msg = tooLongTexts.ReplaceAllStringFunc(msg, func(m string) string {
		sub := tooLongTexts.FindStringSubmatch(m)
		i, err := strconv.Atoi(sub[2])
		if err != nil {
			return m
		}
		return map[string]string{"input": "text", "documents": "document"}[sub[1]] + " " + strconv.Itoa(i+1)
	})
	if n == 1 {
		msg = strings.Replace(msg, ": input is ", ": the text is ", 1)
	}
	return strings.Replace(msg, "(truncate cuts", "(-truncate cuts", 1)
}

// rerankTexts scores docs for query, best first as /v1/rerank orders them
// (ties in the documents' order), the topN best (0: all).
func rerankTexts(ctx context.Context, s *engine.Session, query string, docs []string, topN int, opts engine.EmbedOptions) (rerankJSON, error) {
	scores, err := s.Rerank(ctx, query, docs, opts)
	if err != nil {
		return rerankJSON{}, err
	}
	out := rerankJSON{Results: make([]rerankResultJSON, len(scores))}
	for i, sc := range scores {
		out.Results[i] = rerankResultJSON{Index: i, RelevanceScore: sc.Value}
		out.Usage.PromptTokens += sc.Tokens
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	slices.SortStableFunc(out.Results, func(a, b rerankResultJSON) int {
		switch {
		case a.RelevanceScore > b.RelevanceScore:
			return -1
		case a.RelevanceScore < b.RelevanceScore:
			return 1
		}
		return 0
	})
	if topN > 0 && topN < len(out.Results) {
		out.Results = out.Results[:topN]
	}
	return out, nil
}

// readTextArgs is the texts of the command line: each argument one, and
// "-" the lines of stdin (blank lines skipped), in their place.
func readTextArgs(args []string, stdin io.Reader) ([]string, error) {
	var texts []string
	read := false
	for _, a := range args {
		if a != stdinTexts {
			texts = append(texts, a)
			continue
		}
		if read {
			return nil, errors.New("- is given twice: stdin is read once")
		}
		read = true
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20) // a line may be a long document
		for sc.Scan() {
			if line := strings.TrimSuffix(sc.Text(), "\r"); strings.TrimSpace(line) != "" {
				texts = append(texts, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
	}
	return texts, nil
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// textError words an error of Embed or Rerank for the command line: the
// engine names a text by its field in the HTTP API ("input[3]",
// "documents[0]", "input" for a lone text or the list), the command line
// by the argument it was ("text 4", "document 1", "the texts").
func textError(err error, cmd string, n int) string {
	var oe *engine.OptionError
	if !errors.As(err, &oe) {
		if errors.Is(err, engine.ErrPromptTooLong) {
			return tooLongError(err.Error(), n)
		}
		return err.Error()
	}
	name, index, _ := strings.Cut(oe.Field, "[")
	noun, ok := map[string]string{"input": "text", "documents": "document", "query": "-query"}[name]
	if !ok {
		return flagError(err)
	}
	if i, err := strconv.Atoi(strings.TrimSuffix(index, "]")); err == nil {
		return fmt.Sprintf("%s %d %s", noun, i+1, oe.Problem)
	}
	if noun != "-query" && n > 1 {
		noun = "the " + noun + "s"
	}
	return noun + " " + oe.Problem
}
