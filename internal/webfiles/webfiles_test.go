package webfiles

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	text := `# a comment

site,npm  wasmlm.js        web/wasmlm.js
npm       README.md        web/npm/README.md
site      index.html       web/demo/index.html
site,npm  wasmlm.wasm      built
site,npm  models/LICENSE   models/LICENSE
none      -                web/README.md
`
	list, err := Parse([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, List{
		{Name: "wasmlm.js", Source: "web/wasmlm.js", Site: true, NPM: true},
		{Name: "README.md", Source: "web/npm/README.md", NPM: true},
		{Name: "index.html", Source: "web/demo/index.html", Site: true},
		{Name: "wasmlm.wasm", Source: Built, Site: true, NPM: true},
		{Name: "models/LICENSE", Source: "models/LICENSE", Site: true, NPM: true},
		{Source: "web/README.md"},
	}, list)
	assert.Equal(t, []string{"wasmlm.js", "index.html", "wasmlm.wasm", "models/LICENSE"}, list.Site().Names())
	assert.Equal(t, []string{"wasmlm.js", "README.md", "wasmlm.wasm", "models/LICENSE"}, list.NPM().Names())
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		name, text, err string
	}{
		{"two fields", "site a.js\n", "web/files.txt:1: 2 fields, want 3 (ships name source)"},
		{"four fields", "site a.js web/a.js x\n", "web/files.txt:1: 4 fields"},
		{"unknown ships", "# c\nbrowser a.js web/a.js\n", `web/files.txt:2: ships is "browser", want site, npm, site,npm or none`},
		{"npm,site", "npm,site a.js web/a.js\n", `ships is "npm,site"`},
		{"none with a name", "none a.js web/a.js\n", `web/files.txt:1: name is "a.js" for a file that ships nowhere, want -`},
		{"none built", "none - built\n", "source is built for a file that ships nowhere"},
		{"shipped without a name", "site - web/a.js\n", `name "-" is not a clean relative path`},
		{"absolute name", "site /a.js web/a.js\n", `name "/a.js" is not a clean relative path`},
		{"name outside", "npm ../a.js web/a.js\n", `name "../a.js" is not a clean relative path`},
		{"unclean name", "npm a//b.js web/a.js\n", `name "a//b.js" is not a clean relative path`},
		{"unclean source", "npm a.js ./web/a.js\n", `source "./web/a.js" is not a clean relative path`},
		{"source twice", "site a.js web/a.js\nnpm b.js web/a.js\n", "web/files.txt:2: source web/a.js is line 1's too"},
		{"name twice in the site", "site a.js web/a.js\nsite,npm a.js web/b.js\n", "web/files.txt:2: name a.js is line 1's too in the site"},
		{"name twice in the package", "npm a.js web/a.js\nsite,npm a.js web/b.js\n", "web/files.txt:2: name a.js is line 1's too in the package"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
}

func TestParseTakesANameOnceInEach(t *testing.T) {
	// The site's README and the package's may share a name: each ships one.
	list, err := Parse([]byte("site README.md web/site.md\nnpm README.md web/npm.md\n"))
	require.NoError(t, err)
	assert.Len(t, list, 2)
}
