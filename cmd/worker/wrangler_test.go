package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWranglerTomlUncommentsToValidTables: wrangler.toml's commented-out
// settings are meant to be uncommented; a TOML table may be declared only
// once, so each [table] header, commented or not, appears once.
func TestWranglerTomlUncommentsToValidTables(t *testing.T) {
	f, err := os.Open("../../wrangler.toml")
	require.NoError(t, err)
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "#"))
		if strings.HasPrefix(line, "[") && !strings.HasPrefix(line, "[[") {
			if end := strings.Index(line, "]"); end > 0 && !strings.Contains(line[:end], " ") {
				seen[line[:end+1]]++
			}
		}
	}
	require.NoError(t, sc.Err())
	assert.Contains(t, seen, "[vars]")
	for table, n := range seen {
		assert.Equal(t, 1, n, "wrangler.toml declares %s %d times", table, n)
	}
}
