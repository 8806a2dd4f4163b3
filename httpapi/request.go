package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/wasmlm/wasmlm/openai"
)

// readBody reads the whole request body, refusing one over limit bytes, or
// cut short by the server's read deadline (http.Server.ReadTimeout). It
// reads to the end so that net/http notices, from then on, a client that
// hangs up (and cancels the request's context).
func readBody(r *http.Request, w http.ResponseWriter, limit int64) ([]byte, *apiError) {
	tooLarge := &apiError{status: http.StatusRequestEntityTooLarge, typ: typeInvalidRequest, code: "request_too_large",
		message: fmt.Sprintf("the request body is larger than this server's limit of %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &apiError{status: http.StatusRequestTimeout, typ: typeInvalidRequest, code: "request_timeout",
			message: "the request body did not arrive within the server's read timeout"}
	case err != nil:
		return nil, badRequest("", "invalid_body", "cannot read the request body: %v", err)
	}
	return body, nil
}

// readAll is io.ReadAll into a buffer of size bytes (a body's declared
// length; -1 when unknown), so that a body of a megabyte takes a megabyte,
// not the 2 MB io.ReadAll's growing buffer allocates on its way there.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size+1, 512)) // +1: the read that finds the end needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than declared, or none declared: grow
		}
	}
}

// tokenizeRequest is POST /tokenize, as llama.cpp's server takes it.
type tokenizeRequest struct {
	Content      *string `json:"content"`
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial *bool   `json:"parse_special"` // llama.cpp's default: true
}

// detokenizeRequest is POST /detokenize.
type detokenizeRequest struct {
	Tokens *[]int `json:"tokens"`
}

// decodeJSON unmarshals a request body into v, turning every failure into
// the 400 that names the field at fault (openai.Decode).
func decodeJSON(body []byte, v any) *apiError {
	if e := openai.Decode(body, v); e != nil {
		return requestError(e)
	}
	return nil
}
