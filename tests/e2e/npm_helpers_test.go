//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The npm package (make npm): packed as npm publish would pack it, and
// installed from that tarball into throwaway apps, as a user's app installs
// it from the registry.

// packed is the npm package packed: its tarball and what npm pack says of it.
type packed struct {
	tarball string
	info    struct {
		Name         string `json:"name"`
		Version      string `json:"version"`
		Size         int    `json:"size"`
		UnpackedSize int    `json:"unpackedSize"`
		Files        []struct {
			Path string `json:"path"`
			Size int    `json:"size"`
		} `json:"files"`
	}
}

var thePackage shared[*packed]

// npmPackage packs the package in WASMLM_NPM_BUILD (`make test-e2e-npm`
// sets it; otherwise `make npm` builds one in a temporary directory).
func npmPackage(t testing.TB) *packed {
	t.Helper()
	npm := needTool(t, "npm", "Debian package npm")
	return thePackage.get(t, func() (*packed, error) {
		dir, err := os.MkdirTemp("", "wasmlm-npm-")
		if err != nil {
			return nil, err
		}
		atShutdown(func() { removeAll(dir) })
		pkg := os.Getenv("WASMLM_NPM_BUILD")
		if pkg == "" {
			pkg = filepath.Join(dir, "package")
			if err := run(repoRoot(t), nil, "make", "-s", "npm", "NPM_DIR="+pkg, "WEB_DIST="+filepath.Join(dir, "web")); err != nil {
				return nil, fmt.Errorf("building the package (make npm): %w", err)
			}
		}
		// As README.md says, from the repository's root, the folder
		// written ./build/npm: npm takes build/npm for a GitHub repository.
		rel, err := filepath.Rel(repoRoot(t), pkg)
		if err != nil {
			return nil, err
		}
		arg := "./" + filepath.ToSlash(rel)
		cmd := exec.Command(npm, "pack", arg, "--json", "--pack-destination", dir)
		cmd.Dir = repoRoot(t)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("npm pack %s in %s: %w", arg, cmd.Dir, err)
		}
		var infos []json.RawMessage
		if err := json.Unmarshal(out, &infos); err != nil || len(infos) != 1 {
			return nil, fmt.Errorf("npm pack printed %s", out)
		}
		p := &packed{}
		if err := json.Unmarshal(infos[0], &p.info); err != nil {
			return nil, err
		}
		p.tarball = filepath.Join(dir, fmt.Sprintf("%s-%s.tgz", p.info.Name, p.info.Version))
		if _, err := os.Stat(p.tarball); err != nil {
			return nil, err
		}
		return p, nil
	})
}

// npmApp writes files into a new app directory (a package.json of type
// module first) and installs the packed package into its node_modules from
// the tarball, offline. It returns the directory.
func npmApp(t *testing.T, files map[string]string) string {
	t.Helper()
	p := npmPackage(t)
	dir := t.TempDir()
	all := map[string]string{"package.json": `{ "name": "app", "private": true, "type": "module" }` + "\n"}
	for name, text := range files {
		all[name] = text
	}
	for name, text := range all {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	require.NoError(t, run(dir, nil, "npm", "install", "--offline", "--no-audit", "--no-fund", "--no-save", p.tarball))
	return dir
}

// runIn runs a program in dir for at most three minutes and returns its
// standard output; a failure reports its standard error.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	return runWithin(t, 3*time.Minute, dir, env, name, args...)
}

// runWithin runs a program in dir, killed after limit, and returns its
// standard output; a failure (a kill, an exit code other than 0) reports its
// standard error.
func runWithin(t *testing.T, limit time.Duration, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v in %s: %s", name, args, dir, stderr.String())
	return string(out)
}

// staticSite serves dir on 127.0.0.1 as a static host would (with
// Access-Control-Allow-Origin: * when cors, as CDNs send), for openTab.
func staticSite(t *testing.T, dir string, cors bool) *site {
	t.Helper()
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cors {
			w.Header().Set("Access-Control-Allow-Origin", "*")
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &site{url: srv.URL, dist: dir, hits: map[string]int{}}
}
