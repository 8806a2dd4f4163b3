// Command wasm is wasmlm's WebAssembly entry point (GOOS=js GOARCH=wasm): it
// registers the jsbridge binding as globalThis.wasmlm and then blocks, so
// JavaScript can call it for the rest of the page's life. web/wasmlm.worker.js
// runs it inside a Web Worker; `make wasm` builds it.
//
// Started with arguments (the npm package's command line, wasmlm-cli.js,
// runs the serving build under Node.js as `wasmlm serve ...`), it runs that
// command instead and exits (command_js.go).
//
// The binary holds no model: the default model ships as files beside it
// (web/dist/models/), so a page that loads its own model does not download
// the default one inside the .wasm.
package main

import (
	"os"
	"syscall/js"

	"github.com/wasmlm/wasmlm/jsbridge"
)

func main() {
	if len(os.Args) > 1 { // a page's Go program has one argument, "js"
		os.Exit(runCommand(os.Args[1:]))
	}
	b := jsbridge.New()
	js.Global().Set("wasmlm", b.Value())
	// Returning from main would exit the Go program, and an exited program
	// can never be called again: block forever while JavaScript calls in.
	select {}
}
