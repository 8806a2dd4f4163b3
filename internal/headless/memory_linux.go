//go:build linux && !js

package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
}

// Renderers lists the renderer processes of the browser of ctx (a context
// from Start or a tab of it): the processes descended from the browser's
// whose command line says --type=renderer.
func Renderers(ctx context.Context) ([]Renderer, error) {
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
	var out []Renderer
	for pid := range parent {
		if !descends(pid, root, parent) {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmd, []byte("--type=renderer")) {
			continue
		}
		r := Renderer{PID: pid}
		r.RSS, _ = statusBytes(pid, "VmRSS")
		r.PeakRSS, _ = statusBytes(pid, "VmHWM")
		out = append(out, r)
	}
	return out, nil
}

// ResetPeaks starts every renderer's PeakRSS again from its present
// resident memory (Linux's clear_refs 5).
func ResetPeaks(ctx context.Context) error {
	rs, err := Renderers(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", r.PID), []byte("5"), 0); err != nil {
			return err
		}
	}
	return nil
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
