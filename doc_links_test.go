//go:build !js

package wasmlm_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markdownFiles are the repository's Markdown documents: the front page,
// docs/, the package READMEs and the rest, without builds and node_modules.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch {
			case path != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "node_modules", path == "build", path == filepath.Join("web", "dist"):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

var (
	// mdLink is an inline link or image: [text](target) or ![alt](target).
	mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	// inlineCode is a code span, whose text is no link.
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// prose returns a Markdown file's lines outside fenced code blocks, with
// code spans blanked.
func prose(text string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, inlineCode.ReplaceAllString(line, ""))
		}
	}
	return lines
}

// anchors are the heading anchors GitHub gives a Markdown file: each
// heading in lower case, without punctuation, its spaces hyphens; a repeated
// one gets -1, -2, ….
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestMarkdownLinksResolve: every relative link of every Markdown document
// points at a file or folder of the repository, and a link to a heading of
// a Markdown file (file.md#heading, or #heading in the same file) at a
// heading that file has, so moving a section cannot leave a link behind.
func TestMarkdownLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	require.Contains(t, files, "README.md")
	texts := map[string]string{}
	read := func(path string) (string, bool) {
		if text, ok := texts[path]; ok {
			return text, true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		texts[path] = string(b)
		return texts[path], true
	}
	checked := 0
	for _, file := range files {
		text, ok := read(file)
		require.True(t, ok, file)
		for _, line := range prose(text) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						assert.Failf(t, "a link to a missing file", "%s links to %s: %v", file, target, err)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				destText, _ := read(dest)
				assert.True(t, anchors(destText)[anchor], "%s links to %s: %s has no heading #%s", file, target, dest, anchor)
			}
		}
	}
	assert.Positive(t, checked, "no relative links found: the link pattern is broken")
}

// The anchors are GitHub's.
func TestAnchors(t *testing.T) {
	got := anchors("# The npm package: bundlers, Node.js, Deno, Bun\n```\n# not a heading\n```\n## Side by side — wllama's\n## Limits\n## Limits\n")
	assert.Equal(t, map[string]bool{"the-npm-package-bundlers-nodejs-deno-bun": true, "side-by-side--wllamas": true, "limits": true, "limits-1": true}, got)
}

// TestFrontPageLinksEveryDoc: the README links every page of docs/ and
// every package README, so no moved section is out of a reader's reach.
func TestFrontPageLinksEveryDoc(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	linked := map[string]bool{}
	for _, line := range prose(string(readme)) {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			path, _, _ := strings.Cut(m[1], "#")
			linked[filepath.Clean(path)] = true
		}
	}
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, p := range append(pages, "ARCHITECTURE.md", filepath.Join("web", "README.md"), filepath.Join("httpapi", "README.md"), filepath.Join("bench", "README.md")) {
		assert.True(t, linked[p], "README.md does not link %s", p)
	}
}
