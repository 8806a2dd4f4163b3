package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// defaultHFEndpoint is where hf: models download from unless HF_ENDPOINT
// (the variable huggingface_hub reads) names another server, such as a
// mirror or a test's stand-in.
const defaultHFEndpoint = "https://huggingface.co"

// hfFile is a file of a Hugging Face repository, named by the shorthand
// hf:owner/repo/path/in/repo.gguf or hf:owner/repo/path/in/repo.gguf@revision.
type hfFile struct {
	owner, repo string
	path        string // in the repository, slash-separated
	revision    string // a branch, tag or commit; main when the shorthand names none
}

var (
	hfName     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	hfRevision = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// isHF reports whether s is written as an hf: shorthand (well formed or not).
func isHF(s string) bool { return len(s) >= 3 && strings.EqualFold(s[:3], "hf:") }

// parseHF reads an hf: shorthand; the error says what is malformed, in the
// words the JavaScript library uses for the same string.
func parseHF(s string) (hfFile, error) {
	bad := func(why string) error {
		return fmt.Errorf("%q %s: a Hugging Face file is hf:owner/repo/file.gguf, or hf:owner/repo/file.gguf@revision", s, why)
	}
	if !isHF(s) {
		return hfFile{}, bad("does not start with hf:")
	}
	rest := s[3:]
	if strings.HasPrefix(rest, "/") {
		return hfFile{}, bad("has a slash after hf: (hf:owner/…, not hf://owner/…)")
	}
	f := hfFile{revision: "main"}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		f.revision, rest = rest[at+1:], rest[:at]
		if !hfRevision.MatchString(f.revision) || badSegment(strings.Split(f.revision, "/")) {
			return hfFile{}, bad(fmt.Sprintf("has a malformed revision %q", f.revision))
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || !hfName.MatchString(parts[0]) || !hfName.MatchString(parts[1]) {
		return hfFile{}, bad("does not start with an owner and a repository (letters, digits, . _ -)")
	}
	if len(parts) == 2 {
		return hfFile{}, bad("names no file in the repository")
	}
	if badSegment(parts[2:]) || strings.ContainsAny(rest, " \t\r\n?#\\%") {
		return hfFile{}, bad("has an empty or malformed path in the repository")
	}
	f.owner, f.repo, f.path = parts[0], parts[1], strings.Join(parts[2:], "/")
	return f, nil
}

// badSegment reports whether a path has an empty, "." or ".." segment.
func badSegment(segments []string) bool {
	for _, p := range segments {
		if p == "" || p == "." || p == ".." {
			return true
		}
	}
	return false
}

// url is the file's download URL on endpoint:
// endpoint/owner/repo/resolve/revision/path.
func (f hfFile) url(endpoint string) string {
	segs := []string{strings.TrimRight(endpoint, "/"), f.owner, f.repo, "resolve", url.PathEscape(f.revision)}
	for _, p := range strings.Split(f.path, "/") {
		segs = append(segs, url.PathEscape(p))
	}
	return strings.Join(segs, "/")
}

// withPath is f naming another file of the same repository and revision.
func (f hfFile) withPath(p string) hfFile {
	f.path = p
	return f
}

// hfEndpoint is HF_ENDPOINT, checked, or defaultHFEndpoint when unset.
func hfEndpoint() (string, error) {
	e := os.Getenv("HF_ENDPOINT")
	if e == "" {
		return defaultHFEndpoint, nil
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("HF_ENDPOINT %q is not an http:// or https:// URL without a query, such as %s", e, defaultHFEndpoint)
	}
	return strings.TrimRight(e, "/"), nil
}

// hfCacheDir is where hf: models are kept: WASMLM_CACHE_DIR/hf, or the
// user's cache directory's wasmlm/hf.
func hfCacheDir() (string, error) {
	if d := os.Getenv("WASMLM_CACHE_DIR"); d != "" {
		return filepath.Join(d, "hf"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for hf: models (set WASMLM_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "wasmlm", "hf"), nil
}

// localPath is where f is kept under the cache directory dir:
// dir/owner/repo/revision/path (a revision's slashes escaped).
func (f hfFile) localPath(dir string) string {
	return filepath.Join(dir, f.owner, f.repo, url.PathEscape(f.revision), filepath.FromSlash(f.path))
}

// fetchHF downloads the model an hf: shorthand names into the cache (every
// part of a split model, when it names the first) unless it is there
// already, and returns the local path of the file -m reads. A file once
// downloaded is not checked again: a revision that moves (main) is fetched
// anew after its files are deleted from the cache.
func fetchHF(ctx context.Context, s string, log io.Writer) (string, error) {
	f, err := parseHF(s)
	if err != nil {
		return "", err
	}
	endpoint, err := hfEndpoint()
	if err != nil {
		return "", err
	}
	dir, err := hfCacheDir()
	if err != nil {
		return "", err
	}
	files := []hfFile{f}
	if prefix, no, count, ok := gguf.ParseSplitPath(f.path); ok && no == 1 && count > 1 {
		for i := 2; i <= count; i++ {
			files = append(files, f.withPath(gguf.SplitPath(prefix, i, count)))
		}
	}
	for _, part := range files {
		if err := download(ctx, part.url(endpoint), part.localPath(dir), log); err != nil {
			return "", fmt.Errorf("%s: %w", s, err)
		}
	}
	return f.localPath(dir), nil
}

// download fetches url into the file dst unless dst exists, through a
// temporary file beside it, so that an interrupted download leaves nothing
// at dst. HF_TOKEN, where set, is sent as a bearer token (gated models).
func download(ctx context.Context, url, dst string, log io.Writer) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if tok := os.Getenv("HF_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		hint := ""
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
			hint = " (a gated model needs HF_TOKEN)"
		}
		return fmt.Errorf("GET %s: %s%s", url, res.Status, hint)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	size := "unknown size"
	if res.ContentLength >= 0 {
		size = fmt.Sprintf("%.1f MB", float64(res.ContentLength)/1e6)
	}
	fmt.Fprintf(log, "downloading %s (%s) to %s\n", url, size, dst)
	tmp, err := os.CreateTemp(filepath.Dir(dst), path.Base(dst)+".*.part")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	n, err := io.Copy(tmp, res.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && res.ContentLength >= 0 && n != res.ContentLength {
		err = fmt.Errorf("GET %s: %d bytes of %d", url, n, res.ContentLength)
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return errors.Join(fmt.Errorf("keeping %s", dst), err)
	}
	return nil
}
