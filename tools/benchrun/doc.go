//go:build !js

package main

import (
	"io"
	"strings"

	"github.com/wasmlm/wasmlm/tools/benchdoc"
)

// docTables writes the tables the benchmark page keeps of a run, by its
// mode: the side-by-side tables and their targets, the memory table, the
// constrained-sampling tables or the embedding tables (tools/benchdoc says
// how the page holds them).
func docTables(w io.Writer, rep Report, tg Targets) {
	switch {
	case len(rep.Embeds) > 0:
		printEmbed(w, rep, tg.Embed)
	case rep.Settings.Mode == "memory":
		printMemory(w, rep, tg.Memory)
	case rep.Settings.Mode == "grammar":
		printGrammar(w, rep, tg.Grammar)
	case rep.Settings.Mode == "webgpu":
		printWebGPU(w, rep)
	default:
		printSideBySide(w, rep, tg)
	}
}

// writeDoc rewrites the blocks of the page at path that name results with
// rep's tables.
func writeDoc(path, results string, rep Report, tg Targets, log io.Writer) error {
	var printed strings.Builder
	docTables(&printed, rep, tg)
	return benchdoc.Write(path, results, printed.String(), log)
}
