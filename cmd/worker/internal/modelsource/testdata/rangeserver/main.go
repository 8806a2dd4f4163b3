// Command rangeserver is the web server of modelsource's wasm tests, which
// cannot listen themselves: it serves the files of a directory on
// 127.0.0.1 with net/http's Range support under /ranged/, and the same
// files ignoring Range (200, the whole file) under /whole/. It prints its
// base URL, then serves until its standard input closes.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rangeserver DIR")
		os.Exit(2)
	}
	files := http.FileServer(http.Dir(os.Args[1]))
	mux := http.NewServeMux()
	mux.Handle("/ranged/", http.StripPrefix("/ranged", files))
	mux.Handle("/whole/", http.StripPrefix("/whole", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Range")
		files.ServeHTTP(w, r)
	})))
	s := httptest.NewServer(mux) // on 127.0.0.1
	defer s.Close()
	fmt.Println(s.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
}
