package modelsource

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// maxParts bounds how many files a split model may have here: a model that
// fits an isolate needs a few (llama-gguf-split's defaults cut by 128
// tensors), and each part costs requests before any weight is read.
const maxParts = 256

// partNames are the names of the files of the model named name: name
// itself, or for the first part of a split GGUF set
// (name-00001-of-0000N.gguf, an object key or a URL whose path ends so)
// every part's name in order. Naming a later part is an error: the first
// holds the metadata.
func partNames(name string) ([]string, error) {
	p, end := filePath(name)
	prefix, no, count, ok := gguf.ParseSplitPath(p)
	if !ok {
		return []string{name}, nil
	}
	suffix := p[len(prefix):]
	at := strings.LastIndex(name[:end], suffix)
	if at < 0 { // a path with the suffix percent-encoded
		return []string{name}, nil
	}
	shown := func(n string) string { return n }
	if end < len(name) || strings.Contains(name, "@") { // a URL's query, fragment or user: safeURL's to show
		shown = safeURL
	}
	if no != 1 {
		return nil, fmt.Errorf("%s names part %d of a split model: name its first part, %s", shown(name), no, shown(name[:at]+gguf.SplitPath("", 1, count)+name[at+len(suffix):]))
	}
	if count > maxParts {
		return nil, fmt.Errorf("%s says the model is in %d parts; at most %d are read", shown(name), count, maxParts)
	}
	names := make([]string, count)
	for i := range count {
		names[i] = name[:at] + gguf.SplitPath("", i+1, count) + name[at+len(suffix):]
	}
	return names, nil
}

// ServedName is the name a model stored under name (an object key or a
// URL) is served under, as wasmlm serve names a file: its base name without
// .gguf, and a split model's without its part number.
func ServedName(name string) string {
	p, _ := filePath(name)
	base := path.Base(p)
	if prefix, _, _, ok := gguf.ParseSplitPath(base); ok {
		return prefix
	}
	return strings.TrimSuffix(base, ".gguf")
}

// filePath is name's path (a URL's path, or an object key itself) and
// where in name that path ends.
func filePath(name string) (p string, end int) {
	if u, err := url.Parse(name); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		end = len(name)
		if i := strings.IndexAny(name, "?#"); i >= 0 {
			end = i
		}
		return u.Path, end
	}
	return name, len(name)
}

// safeURL is u without its query, fragment and user information, which
// may carry credentials: what messages show of a URL.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the URL (unparsable)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}
