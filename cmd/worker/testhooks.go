//go:build js && wasm && wasmlm_testhooks

package main

import "net/http"

// A test build (-tags wasmlm_testhooks, never make worker's) adds a route
// whose request makes the Go program panic outside the API's recovery, so
// that the tests see worker.mjs replace a Go instance that exited, and
// reports in /health's instance object how many instances were live when
// this one started ("live", itself included: 1 unless two were).
func init() {
	testHealth = func(in *instance, health map[string]any) { health["live"] = in.live }
	testRoutes = map[string]http.HandlerFunc{
		"/__wasmlm_test/panic": func(http.ResponseWriter, *http.Request) {
			panic("wasmlm test hook: a panic the instance does not survive")
		},
	}
}
