package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/webfiles"
)

// root is the repository's root, where make and npmpack run.
const root = "../.."

func readList(t *testing.T) webfiles.List {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(webfiles.Path)))
	require.NoError(t, err)
	list, err := webfiles.Parse(text)
	require.NoError(t, err)
	return list
}

// treeFiles is every file under dir but those under skip (a directory
// relative to it), as slash-separated paths relative to dir.
func treeFiles(t *testing.T, dir, skip string) []string {
	t.Helper()
	var got []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == skip:
			return filepath.SkipDir
		case !d.IsDir():
			got = append(got, rel)
		}
		return err
	}))
	slices.Sort(got)
	return got
}

// sameBytes checks that each of want's files in dir holds the bytes of its
// source in the repository at repo.
func sameBytes(t *testing.T, repo, dir string, want webfiles.List) {
	t.Helper()
	for _, f := range want {
		if f.Source == webfiles.Built {
			continue
		}
		src, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(f.Source)))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Name)))
		require.NoError(t, err)
		assert.Equal(t, src, got, "%s is %s", f.Name, f.Source)
	}
}

// Every file of web/ (but the built site, web/dist) is a line of
// web/files.txt: shipped by the site, the npm package or both, or by
// neither on purpose; and every source the list names exists.
func TestFilesListsEveryFileOfWeb(t *testing.T) {
	list := readList(t)
	var sources []string
	for _, f := range list {
		if f.Source == webfiles.Built {
			continue
		}
		sources = append(sources, f.Source)
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(f.Source)))
		assert.NoError(t, err, "%s names %s", webfiles.Path, f.Source)
	}
	var unlisted []string
	for _, f := range treeFiles(t, filepath.Join(root, "web"), "dist") {
		if !slices.Contains(sources, "web/"+f) {
			unlisted = append(unlisted, "web/"+f)
		}
	}
	assert.Empty(t, unlisted, "files of web/ that %s does not list (ships site, npm, site,npm or none)", webfiles.Path)
}

// make web installs exactly the site's files of the list (those make wasm
// builds aside: -o wasm skips it), each its source's bytes.
func TestMakeWebInstallsTheSiteFiles(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("make is missing (Debian package make)")
		}
		t.Skip("make is missing (Debian package make)")
	}
	dist := t.TempDir()
	cmd := exec.Command(makeBin, "-s", "-o", "wasm", "web", "WEB_DIST="+dist)
	cmd.Dir = root
	// Run as a fresh make, not as a sub-make of a `make test`.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make web: %s", out)

	var want []string
	site := readList(t).Site()
	for _, f := range site {
		if f.Source != webfiles.Built {
			want = append(want, f.Name)
		}
	}
	slices.Sort(want)
	require.NotEmpty(t, want)
	assert.Equal(t, want, treeFiles(t, dist, ""), "the files make web installs")
	sameBytes(t, root, dist, site)
}

// npmpack writes exactly the package's files of the list and package.json:
// the built ones from the -web directory, the others from their sources.
func TestBuildCopiesThePackageFiles(t *testing.T) {
	pkg := readList(t).NPM()
	web, out := t.TempDir(), filepath.Join(t.TempDir(), "npm")
	for _, f := range pkg {
		if f.Source == webfiles.Built {
			require.NoError(t, os.WriteFile(filepath.Join(web, f.Name), []byte("built "+f.Name), 0o644))
		}
	}
	t.Chdir(root)
	require.NoError(t, build(web, out))

	want := append(pkg.Names(), "package.json")
	slices.Sort(want)
	assert.Equal(t, want, treeFiles(t, out, ""), "the files npmpack writes")
	for _, f := range pkg {
		if f.Source == webfiles.Built {
			got, err := os.ReadFile(filepath.Join(out, f.Name))
			require.NoError(t, err)
			assert.Equal(t, "built "+f.Name, string(got), "%s comes from -web", f.Name)
		}
	}
	sameBytes(t, ".", out, pkg)
}

// A package whose built files make wasm has not written yet says so.
func TestBuildWithoutTheEngineSaysMakeWasm(t *testing.T) {
	t.Chdir(root)
	err := build(t.TempDir(), filepath.Join(t.TempDir(), "npm"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(make wasm writes it)")
}

// web/version.js exports the VERSION file's version, and npmpack refuses a
// web/version.js that says another.
func TestVersionJSIsTheVersionFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "VERSION"))
	require.NoError(t, err)
	version := strings.TrimSpace(string(raw))
	require.NoError(t, checkJSVersion(filepath.Join(root, "web", "version.js"), version))
	other := filepath.Join(t.TempDir(), "version.js")
	require.NoError(t, os.WriteFile(other, []byte("export const VERSION = '0.0.0-old';\n"), 0o644))
	err = checkJSVersion(other, version)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "make them equal")
}
