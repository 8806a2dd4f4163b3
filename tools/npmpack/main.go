// Command npmpack assembles the npm package wasmlm (make npm): the browser
// module and its worker, Go's wasm_exec.js, the engine's two wasm builds
// (wasmlm.wasm, and wasmlm-serve.wasm with lm.serve's endpoint, whose
// Service Worker is wasmlm.sw.js) and SIMD kernels, the Node.js entry, the types, the default model as its own
// entry (wasmlm/default-model), and a package.json whose version is the
// repository's VERSION file: the files web/files.txt says the package ships,
// the list the site's (make web) are taken from too. It publishes nothing:
// `npm publish build/npm` does.
//
//	go run ./tools/npmpack -web web/dist -o build/npm
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wasmlm/wasmlm/internal/webfiles"
)

// files is every file of the package but package.json: the lines of
// web/files.txt that ship in it (a built file comes from the -web
// directory, where make wasm wrote it).
func files(web string) ([]file, error) {
	text, err := os.ReadFile(filepath.FromSlash(webfiles.Path))
	if err != nil {
		return nil, err
	}
	list, err := webfiles.Parse(text)
	if err != nil {
		return nil, err
	}
	var fs []file
	for _, f := range list.NPM() {
		src, built := filepath.FromSlash(f.Source), f.Source == webfiles.Built
		if built {
			src = filepath.Join(web, filepath.FromSlash(f.Name))
		}
		fs = append(fs, file{src: src, built: built, dst: filepath.FromSlash(f.Name)})
	}
	return fs, nil
}

// A file of the package: where it comes from, whether make wasm builds it,
// and its name in the package.
type file struct {
	src   string
	built bool
	dst   string
}

// manifest is the package's package.json. Its keys keep their order: in
// exports the first condition a resolver knows wins, so node must come
// before default (and types first, as TypeScript asks).
func manifest(version string) object {
	return object{
		{"name", "wasmlm"},
		{"version", version},
		{"description", "Run a language model (GGUF: Llama, Qwen3, Gemma 3, BERT embeddings, ...) entirely on the client: in a Web Worker in the browser, in a worker thread in Node.js, Deno and Bun. Pure Go compiled to WebAssembly, SIMD128 kernels, no server needed; npx wasmlm serve serves the OpenAI-compatible HTTP API from Node.js."},
		{"license", "MIT"},
		{"homepage", "https://github.com/wasmlm/wasmlm#readme"},
		{"repository", object{{"type", "git"}, {"url", "git+https://github.com/wasmlm/wasmlm.git"}}},
		{"type", "module"},
		{"keywords", []string{"llm", "language-model", "gguf", "webassembly", "wasm", "llama", "embeddings", "openai", "web-worker"}},
		{"engines", object{{"node", ">=20"}}},
		{"main", "./wasmlm.node.js"},
		{"module", "./wasmlm.js"},
		{"browser", "./wasmlm.js"},
		{"types", "./wasmlm.d.ts"},
		{"bin", object{{"wasmlm", "./wasmlm-cli.js"}}},
		{"exports", object{
			{".", object{
				{"types", "./wasmlm.d.ts"},
				{"browser", "./wasmlm.js"},
				{"node", "./wasmlm.node.js"},
				{"default", "./wasmlm.js"},
			}},
			{"./default-model", object{
				{"types", "./default-model.d.ts"},
				{"default", "./default-model.js"},
			}},
			{"./serve", object{
				{"types", "./serve-engine.d.ts"},
				{"default", "./serve-engine.js"},
			}},
			{"./prompt-api", object{
				{"types", "./prompt-api.d.ts"},
				{"browser", "./prompt-api.js"},
				{"node", "./prompt-api.node.js"},
				{"default", "./prompt-api.js"},
			}},
			{"./package.json", "./package.json"},
		}},
	}
}

// object is a JSON object whose keys keep their order.
type object []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encode(&b, m.key); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := encode(&b, m.value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode writes v as JSON without escaping <, > and & (">=20", not "\u003e=20").
func encode(b *bytes.Buffer, v any) error {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

var versionPattern = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// jsVersion is web/version.js's export of the version.
var jsVersion = regexp.MustCompile(`(?m)^export const VERSION = '([^']*)';$`)

// checkJSVersion says whether the module at path (web/version.js, whose
// VERSION the page's code reads: a SharedWorker's name holds it) exports
// version, the VERSION file's.
func checkJSVersion(path, version string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	m := jsVersion.FindSubmatch(raw)
	if m == nil {
		return fmt.Errorf("%s has no line export const VERSION = '...';", path)
	}
	if string(m[1]) != version {
		return fmt.Errorf("%s says version %s, the VERSION file %s: make them equal", path, m[1], version)
	}
	return nil
}

func main() {
	web := flag.String("web", "web/dist", "the directory `make wasm` wrote wasmlm.wasm, wasmlm-serve.wasm and wasm_exec.js to")
	out := flag.String("o", "build/npm", "the package directory to write (emptied first)")
	flag.Parse()
	if err := build(*web, *out); err != nil {
		fmt.Fprintln(os.Stderr, "npmpack:", err)
		os.Exit(1)
	}
}

func build(web, out string) error {
	raw, err := os.ReadFile("VERSION")
	if err != nil {
		return fmt.Errorf("%w (run from the repository's root)", err)
	}
	version := strings.TrimSpace(string(raw))
	if !versionPattern.MatchString(version) {
		return fmt.Errorf("VERSION holds %q, not a semantic version", version)
	}
	if err := checkJSVersion("web/version.js", version); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	fs, err := files(web)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if err := copyFile(f.src, filepath.Join(out, f.dst)); err != nil {
			if errors.Is(err, os.ErrNotExist) && f.built {
				return fmt.Errorf("%w (make wasm writes it)", err)
			}
			return err
		}
	}
	var compact, pkg bytes.Buffer
	if err := encode(&compact, manifest(version)); err != nil {
		return err
	}
	if err := json.Indent(&pkg, compact.Bytes(), "", "  "); err != nil {
		return err
	}
	pkg.WriteByte('\n')
	return os.WriteFile(filepath.Join(out, "package.json"), pkg.Bytes(), 0o644)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
