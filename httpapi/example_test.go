package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// Serving a model over the OpenAI-compatible API from a Go program: New
// makes an http.Handler for any server (here an httptest one). Greedy
// decoding gives llama2.c's own continuation of the prompt.
func ExampleNew() {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := httpapi.New(model, httpapi.Options{ModelName: "stories260K"})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Println(err)
		return
	}
	text := string(body)
	start := strings.Index(text, `"text":`)
	end := strings.Index(text[start:], `","index"`)
	fmt.Println(resp.Status)
	fmt.Println(text[start : start+end+1])
	// Output:
	// 200 OK
	// "text":", there was a little girl named Lily. She loved to play"
}

// Mounting the API in a Go server of your own: the handler answers its
// paths (/v1/...) wherever it is mounted, here under /llm/ beside the
// server's other routes, with http.StripPrefix.
func ExampleNew_mux() {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	api, err := httpapi.New(model, httpapi.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/llm/", http.StripPrefix("/llm", api))
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, path := range []string{"/hello", "/llm/v1/models"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text := string(body)
		if i := strings.Index(text, `"id":`); i >= 0 {
			text = text[i : i+strings.Index(text[i:], ",")]
		}
		fmt.Println(path, resp.Status, text)
	}
	// Output:
	// /hello 200 OK hello
	// /llm/v1/models 200 OK "id":"wasmlm"
}
