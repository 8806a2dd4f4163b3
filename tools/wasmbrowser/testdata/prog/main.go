// Command prog is what the runner's tests run in the browser: its first
// argument says what to do.
package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	case "files": // reads the module's files, relative to the working directory, and writes none
		wd, _ := os.Getwd()
		fmt.Println("wd", filepath.Base(wd))
		src, err := os.ReadFile("testdata/prog/main.go")
		fmt.Printf("read %q %v\n", strings.SplitN(string(src), "\n", 2)[0], err)
		entries, err := os.ReadDir("testdata")
		for _, e := range entries {
			fmt.Println("entry", e.Name(), e.IsDir())
		}
		fmt.Println("readdir", err)
		f, err := os.Open(filepath.Join(wd, "testdata", "prog", "main.go"))
		if err == nil {
			buf := make([]byte, 7)
			n, err := f.ReadAt(buf, 3)
			fmt.Printf("readat %q %v\n", buf[:n], err)
			st, _ := f.Stat()
			fmt.Println("size", st.Size() == int64(len(src)), st.Mode().IsRegular())
			f.Close()
		}
		_, err = os.Stat("testdata/missing")
		fmt.Println("missing", os.IsNotExist(err))
		_, err = os.ReadFile("/etc/passwd")
		fmt.Println("outside", os.IsPermission(err))
		err = os.WriteFile("testdata/new", []byte("x"), 0o644)
		fmt.Println("write", err != nil)
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
