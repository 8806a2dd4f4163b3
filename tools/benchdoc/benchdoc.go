// Package benchdoc keeps the benchmark page's tables equal to the results
// files they come from. The page (docs/benchmarks.md) holds each table of a
// run between markers that name the results file and the table:
//
//	<!-- benchrun: bench/results-peers.json table 2 -->
//	| model | prompt | … |
//	…
//
//	<!-- /benchrun -->
//
// `make bench` (tools/benchrun) and `make bench-serve` (tools/servebench)
// rewrite the blocks of the results file they wrote, so the page's prose
// stays its author's and its numbers stay the results'.
package benchdoc

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Block finds the page's blocks: the results file, the table's number
// (from 1) and the table's text.
var Block = regexp.MustCompile(`(?s)<!-- benchrun: (\S+) table (\d+) -->\n(.*?)<!-- /benchrun -->`)

// Tables splits printed text into its Markdown tables, each a list of its
// lines.
func Tables(text string) [][]string {
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

// Text is what a block holds for a table: its lines, then a blank line,
// which ends the table before the closing marker.
func Text(table []string) string {
	return strings.Join(table, "\n") + "\n\n"
}

// Rewrite replaces the blocks of page that name results with tables (its
// table n with tables[n-1]); it returns the new page and how many blocks it
// rewrote.
func Rewrite(page, results string, tables [][]string) (string, int, error) {
	var err error
	n := 0
	out := Block.ReplaceAllStringFunc(page, func(block string) string {
		m := Block.FindStringSubmatch(block)
		if m[1] != results || err != nil {
			return block
		}
		i, _ := strconv.Atoi(m[2])
		if i < 1 || i > len(tables) {
			err = fmt.Errorf("a block asks for table %d of %s, which has %d", i, results, len(tables))
			return block
		}
		n++
		return fmt.Sprintf("<!-- benchrun: %s table %d -->\n%s<!-- /benchrun -->", results, i, Text(tables[i-1]))
	})
	return out, n, err
}

// Write rewrites the blocks of the page at path that name results (the
// results file as the page names it, from the repository's root) with the
// tables of printed, and says what it did on log.
func Write(path, results, printed string, log io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	page, n, err := Rewrite(string(b), results, Tables(printed))
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
