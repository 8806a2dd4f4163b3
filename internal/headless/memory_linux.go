//go:build linux && !js

package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chromedp/chromedp"
)

// Renderer is the memory of one of the browser's renderer processes (the
// processes that run pages and their Web Workers), from /proc.
type Renderer struct {
	PID     int
	RSS     uint64 // resident now (VmRSS), bytes
	PeakRSS uint64 // resident at most (VmHWM) since the process started or ResetPeaks
	// Anon is the part of RSS that is the process's own memory (RssAnon),
	// not pages of files (the browser's code) that its processes share.
	Anon uint64
}

// Process is the memory of one of the browser's processes, from /proc.
type Process struct {
	Renderer
	// Type is the process's --type= ("renderer", "gpu-process", "utility",
	// "zygote", ...), or "browser" for the browser process itself.
	Type string
}

// Renderers lists the renderer processes of the browser of ctx (a context
// from Start or a tab of it): the processes descended from the browser's
// whose command line says --type=renderer.
func Renderers(ctx context.Context) ([]Renderer, error) {
	ps, err := Processes(ctx)
	if err != nil {
		return nil, err
	}
	var out []Renderer
	for _, p := range ps {
		if p.Type == "renderer" {
			out = append(out, p.Renderer)
		}
	}
	return out, nil
}

// Processes lists the browser process of ctx (a context from Start or a tab
// of it) and every process descended from it, each with its type.
func Processes(ctx context.Context) ([]Process, error) {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return nil, errors.New("headless: not a context of a browser this process started")
	}
	root := c.Browser.Process().Pid
	parent := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 {
			parent[pid], _ = strconv.Atoi(fields[1])
		}
	}
	var out []Process
	for pid := range parent {
		if pid != root && !descends(pid, root, parent) {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone since the listing
		}
		p := Process{Renderer: Renderer{PID: pid}, Type: processType(cmd)}
		p.RSS, _ = statusBytes(pid, "VmRSS")
		p.PeakRSS, _ = statusBytes(pid, "VmHWM")
		p.Anon, _ = statusBytes(pid, "RssAnon")
		out = append(out, p)
	}
	return out, nil
}

// ResetPeaks starts the PeakRSS of every process of the browser (renderers
// and the rest: see Processes) again from its present resident memory
// (Linux's clear_refs 5). A process that has ended since the listing is
// passed over.
func ResetPeaks(ctx context.Context) error {
	ps, err := Processes(ctx)
	if err != nil {
		return err
	}
	for _, p := range ps {
		err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.PID), []byte("5"), 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// processType is the --type= of a Chromium command line, or "browser".
// Chromium rewrites its children's command lines (their arguments then
// separated by spaces, not NULs), so the value ends at either.
func processType(cmdline []byte) string {
	_, t, ok := bytes.Cut(cmdline, []byte("--type="))
	if !ok {
		return "browser"
	}
	if i := bytes.IndexAny(t, " \x00"); i >= 0 {
		t = t[:i]
	}
	return string(t)
}

func descends(pid, root int, parent map[int]int) bool {
	for range 64 {
		p, ok := parent[pid]
		if !ok || p == 0 {
			return false
		}
		if p == root {
			return true
		}
		pid = p
	}
	return false
}

// statusBytes reads a "kB" field of /proc/pid/status.
func statusBytes(pid int, field string) (uint64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
