//go:build wasmlm_serve

package main

import (
	"io"
	"strings"
)

// nodeUsage are the usage lines of the flags that Node.js honours otherwise
// than the Go CLI's serve, saying what they do here.
var nodeUsage = map[string]string{
	"max-conns":     "connections open at once; in Node.js those beyond it are reset (node:http's maxConnections), not kept waiting (0: no limit)",
	"write-timeout": "the Go CLI's time one write to a client may wait; not applied in Node.js, which buffers what a client has not read (accepted for the Go CLI's command lines)",
	"api-key-file":  "a file of API keys, one per line (# comments); re-read on SIGHUP (sent to the node process: the pid of the start-up line). Once given, the API requires a key, even when the file holds none",
}

// nativeOnlyFlags are the Go CLI's serve flags this build has not.
var nativeOnlyFlags = []string{"web", "isolate", "threads", "tokenizer", "slot-save-path"}

// nativeOnlyNote writes the flag package's output, adding to its error for
// one of nativeOnlyFlags that they are the Go CLI's only.
type nativeOnlyNote struct{ io.Writer }

func (w nativeOnlyNote) Write(p []byte) (int, error) {
	line := string(p)
	for _, name := range nativeOnlyFlags {
		if line == "flag provided but not defined: -"+name+"\n" {
			_, err := io.WriteString(w.Writer, strings.TrimSuffix(line, "\n")+" ("+nativeOnlyList()+" are the Go CLI's only)\n")
			return len(p), err
		}
	}
	return w.Writer.Write(p)
}

// nativeOnlyList names nativeOnlyFlags as a sentence does: "-a, -b and -c".
func nativeOnlyList() string {
	names := make([]string, len(nativeOnlyFlags))
	for i, name := range nativeOnlyFlags {
		names[i] = "-" + name
	}
	last := len(names) - 1
	if last == 0 {
		return names[0]
	}
	return strings.Join(names[:last], ", ") + " and " + names[last]
}
