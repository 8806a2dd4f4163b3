// Command prog is what the runner's tests run in the browser: its first
// argument says what to do.
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall/js"
)

func main() {
	switch os.Args[1] {
	case "echo": // arguments, environment and both streams
		fmt.Printf("args %s\n", strings.Join(os.Args[2:], " "))
		fmt.Printf("env %s=%s %s=%s\n", "WASMLM_PROG", os.Getenv("WASMLM_PROG"), "WASMLM_WASMBROWSER", os.Getenv("WASMLM_WASMBROWSER"))
		fmt.Printf("HOME=%q\n", os.Getenv("HOME"))
		fmt.Fprintln(os.Stderr, "to stderr")
		fmt.Print("no newline")
	case "gpu": // the page is a secure context with WebGPU
		fmt.Println("navigator.gpu:", js.Global().Get("navigator").Get("gpu").Truthy())
	case "exit":
		fmt.Println("exiting with 3")
		os.Exit(3)
	case "panic":
		panic("boom")
	case "hang": // blocks forever, with no timer that could end it
		select {}
	case "throw": // an exception outside Go, in the worker's event loop
		js.Global().Call("setTimeout", js.Global().Get("Function").New("throw new Error('thrown in the worker')"), 0)
		select {}
	case "close": // the worker ends itself without an exit code
		js.Global().Call("close")
		select {}
	}
}
