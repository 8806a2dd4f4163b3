package benchdoc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRewrite: a block of the results file is rewritten with its
// table, a block of another file is left alone, and a block asking for a
// table the run did not print is an error.
func TestRewrite(t *testing.T) {
	page := "prose\n<!-- benchrun: bench/a.json table 2 -->\n| old |\n\n<!-- /benchrun -->\n\n" +
		"<!-- benchrun: bench/b.json table 1 -->\n| other |\n\n<!-- /benchrun -->\n"
	tables := [][]string{{"| one |", "|---|"}, {"| two |", "|---|", "| 2 |"}}
	got, n, err := Rewrite(page, "bench/a.json", tables)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, "prose\n<!-- benchrun: bench/a.json table 2 -->\n| two |\n|---|\n| 2 |\n\n<!-- /benchrun -->\n\n"+
		"<!-- benchrun: bench/b.json table 1 -->\n| other |\n\n<!-- /benchrun -->\n", got)
	_, n, err = Rewrite(page, "bench/c.json", tables)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, _, err = Rewrite(page, "bench/a.json", tables[:1])
	assert.ErrorContains(t, err, "table 2 of bench/a.json, which has 1")
}

// TestTables: the tables of printed text, each its lines, prose left out.
func TestTables(t *testing.T) {
	got := Tables("heading\n\n| a |\n|---|\n| 1 |\n\nprose\n| b |\n")
	assert.Equal(t, [][]string{{"| a |", "|---|", "| 1 |"}, {"| b |"}}, got)
}
