//go:build !js

package llamacppref

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
)

// shared is the test binary's one Node.js process running script.
var shared server

// server is a Node.js process running script, which answers each request
// line on its stdin with one JSON line on its stdout. It starts with the
// first call and lives until the test binary exits: its stdin then closes
// and script ends. A call that fails (the process died, or answered what
// is not JSON) ends the process, and the next call starts another, so one
// model that crashes llama.cpp fails its own check only.
type server struct {
	mu     sync.Mutex // one request at a time
	cmd    *exec.Cmd  // nil: none running
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer // written by cmd's copier: read once cmd has ended
}

// call sends req, as one JSON line, and decodes the answer into res.
func (s *server) call(n Node, req, res any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		if err := s.start(n); err != nil {
			return err
		}
	}
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return s.fail(fmt.Errorf("node %s: writing the request: %w", script, err))
	}
	// node-llama-cpp may log a line of its own before the answer.
	for {
		answer, err := s.out.ReadBytes('\n')
		if err != nil {
			return s.fail(fmt.Errorf("node %s: reading the answer: %w", script, err))
		}
		answer = bytes.TrimSpace(answer)
		if !bytes.HasPrefix(answer, []byte(`{"results"`)) {
			continue
		}
		if err := json.Unmarshal(answer, res); err != nil {
			return s.fail(fmt.Errorf("node %s printed %.200q: %w", script, answer, err))
		}
		return nil
	}
}

// start starts the process. s.mu is held.
func (s *server) start(n Node) error {
	cmd := exec.Command(n.exe, filepath.Join(n.root, script))
	cmd.Dir = n.root
	s.stderr.Reset()
	cmd.Stderr = &s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %s: %w", script, err)
	}
	s.cmd, s.in, s.out = cmd, in, bufio.NewReader(out)
	return nil
}

// fail ends the process after err and returns err with what the process
// wrote on stderr. s.mu is held.
func (s *server) fail(err error) error {
	s.in.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
	return fmt.Errorf("%w: %s", err, &s.stderr)
}
