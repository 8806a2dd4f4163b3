// Package webfiles reads web/files.txt, the one list of the files the site
// (make web, web/dist) and the npm package (make npm, build/npm) ship: each
// file's name in them, where it comes from, and which of the two ships it;
// and the files of web/ that neither ships, on purpose. The Makefile's web
// target reads the list with awk; tools/npmpack and the browser tests read
// it through this package.
package webfiles

import (
	"bytes"
	"fmt"
	"path"
	"strings"
)

// Path is the list's path in the repository.
const Path = "web/files.txt"

// Built is the source of a file that `make wasm` writes into the site (the
// engine's builds and Go's glue for them), where the package takes it from.
const Built = "built"

// A File is a line of the list.
type File struct {
	// Name is the file's path in the site and in the package; "" for a
	// file neither ships.
	Name string
	// Source is its path in the repository, or Built.
	Source string
	// Site and NPM say which of the two ship it.
	Site, NPM bool
}

// A List is the list's files, in its order.
type List []File

// ships are the values of a line's first field.
var ships = map[string]struct{ site, npm bool }{
	"site": {true, false}, "npm": {false, true}, "site,npm": {true, true}, "none": {false, false},
}

// Parse reads the list: a line is "ships name source" (blank lines and
// lines starting with # aside). An error names the line.
func Parse(text []byte) (List, error) {
	var list List
	sources := map[string]int{}
	names := map[[2]string]int{} // {site or package, name} → line
	for i, line := range bytes.Split(text, []byte("\n")) {
		n := i + 1
		f := strings.Fields(string(line))
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 3 (ships name source)", Path, n, len(f))
		}
		where, ok := ships[f[0]]
		if !ok {
			return nil, fmt.Errorf("%s:%d: ships is %q, want site, npm, site,npm or none", Path, n, f[0])
		}
		file := File{Name: f[1], Source: f[2], Site: where.site, NPM: where.npm}
		if f[0] == "none" {
			if file.Name != "-" {
				return nil, fmt.Errorf("%s:%d: name is %q for a file that ships nowhere, want -", Path, n, file.Name)
			}
			if file.Source == Built {
				return nil, fmt.Errorf("%s:%d: source is %s for a file that ships nowhere", Path, n, Built)
			}
			file.Name = ""
		} else if !clean(file.Name) {
			return nil, fmt.Errorf("%s:%d: name %q is not a clean relative path", Path, n, file.Name)
		}
		if file.Source != Built {
			if !clean(file.Source) {
				return nil, fmt.Errorf("%s:%d: source %q is not a clean relative path", Path, n, file.Source)
			}
			if at, dup := sources[file.Source]; dup {
				return nil, fmt.Errorf("%s:%d: source %s is line %d's too", Path, n, file.Source, at)
			}
			sources[file.Source] = n
		}
		for _, in := range []struct {
			name  string
			ships bool
		}{{"site", file.Site}, {"package", file.NPM}} {
			key := [2]string{in.name, file.Name}
			if at, dup := names[key]; dup && in.ships {
				return nil, fmt.Errorf("%s:%d: name %s is line %d's too in the %s", Path, n, file.Name, at, in.name)
			}
			if in.ships {
				names[key] = n
			}
		}
		list = append(list, file)
	}
	return list, nil
}

// clean reports whether p is a relative slash-separated path that stays
// inside its root ("a/b", not "/a", "../a" or "a//b").
func clean(p string) bool {
	return p != "" && p != "-" && !path.IsAbs(p) && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// Site is the files the site ships.
func (l List) Site() List { return l.filter(func(f File) bool { return f.Site }) }

// NPM is the files the npm package ships.
func (l List) NPM() List { return l.filter(func(f File) bool { return f.NPM }) }

// Names is the files' names.
func (l List) Names() []string {
	names := make([]string, len(l))
	for i, f := range l {
		names[i] = f.Name
	}
	return names
}

func (l List) filter(keep func(File) bool) List {
	var out List
	for _, f := range l {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}
