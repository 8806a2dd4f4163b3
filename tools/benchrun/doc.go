//go:build !js

package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// The benchmark page (docs/benchmarks.md) keeps the tables of each mode's
// last run between markers that name the results file and the table:
//
//	<!-- benchrun: bench/results-peers.json table 2 -->
//	| model | prompt | … |
//	…
//
//	<!-- /benchrun -->
//
// A run rewrites the blocks of the results file it wrote, and `-print FILE
// -write-doc` those of FILE, so the page's prose stays the author's and its
// numbers stay the results'.

// docBlock finds the page's blocks: the results file, the table's number
// (from 1) and the table's text.
var docBlock = regexp.MustCompile(`(?s)<!-- benchrun: (\S+) table (\d+) -->\n(.*?)<!-- /benchrun -->`)

// docTables writes the tables the benchmark page keeps of a run, by its
// mode: the side-by-side tables and their targets, the memory table, the
// constrained-sampling tables or the embedding tables.
func docTables(w io.Writer, rep Report, tg Targets) {
	switch {
	case len(rep.Embeds) > 0:
		printEmbed(w, rep, tg.Embed)
	case rep.Settings.Mode == "memory":
		printMemory(w, rep, tg.Memory)
	case rep.Settings.Mode == "grammar":
		printGrammar(w, rep, tg.Grammar)
	default:
		printSideBySide(w, rep, tg)
	}
}

// markdownTables splits printed text into its Markdown tables, each a list
// of its lines.
func markdownTables(text string) [][]string {
	var tables [][]string
	inTable := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "|") && inTable:
			tables[len(tables)-1] = append(tables[len(tables)-1], l)
		case strings.HasPrefix(l, "|"):
			tables, inTable = append(tables, []string{l}), true
		default:
			inTable = false
		}
	}
	return tables
}

// blockText is what a block holds for a table: its lines, then a blank
// line, which ends the table before the closing marker.
func blockText(table []string) string {
	return strings.Join(table, "\n") + "\n\n"
}

// rewriteBlocks replaces the blocks of page that name results with tables
// (its table n with tables[n-1]); it returns the new page and how many
// blocks it rewrote.
func rewriteBlocks(page, results string, tables [][]string) (string, int, error) {
	var err error
	n := 0
	out := docBlock.ReplaceAllStringFunc(page, func(block string) string {
		m := docBlock.FindStringSubmatch(block)
		if m[1] != results || err != nil {
			return block
		}
		i, _ := strconv.Atoi(m[2])
		if i < 1 || i > len(tables) {
			err = fmt.Errorf("a block asks for table %d of %s, which has %d", i, results, len(tables))
			return block
		}
		n++
		return fmt.Sprintf("<!-- benchrun: %s table %d -->\n%s<!-- /benchrun -->", results, i, blockText(tables[i-1]))
	})
	return out, n, err
}

// writeDoc rewrites the blocks of the page at path that name results (the
// results file as the page names it, from the repository's root) with rep's
// tables, and says what it did on log.
func writeDoc(path, results string, rep Report, tg Targets, log io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var printed strings.Builder
	docTables(&printed, rep, tg)
	page, n, err := rewriteBlocks(string(b), results, markdownTables(printed.String()))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n == 0 {
		fmt.Fprintf(log, "%s keeps no table of %s\n", path, results)
		return nil
	}
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "rewrote %d tables of %s in %s\n", n, results, path)
	return nil
}
