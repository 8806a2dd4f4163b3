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
