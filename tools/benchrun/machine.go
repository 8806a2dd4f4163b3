//go:build !js

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/internal/headless"
)

// Machine is what the numbers were measured on.
type Machine struct {
	CPU              string `json:"cpu"`
	Cores            int    `json:"cores"`
	OS               string `json:"os"`
	Kernel           string `json:"kernel"`
	GoVersion        string `json:"go_version"`
	NodeVersion      string `json:"node_version"`
	ChromiumVersion  string `json:"chromium_version"`
	Date             string `json:"date"`
	LoadAverageStart string `json:"load_average_start"` // /proc/loadavg's 1, 5 and 15-minute averages
	LoadAverageEnd   string `json:"load_average_end"`
	Note             string `json:"note"`
}

// machineFacts describes this machine; fields it cannot learn stay empty.
func machineFacts(goCmd string) Machine {
	m := Machine{
		CPU: cpuModel(), Cores: runtime.NumCPU(), OS: osName(), Kernel: strings.TrimSpace(readString("/proc/sys/kernel/osrelease")),
		GoVersion:        strings.TrimPrefix(strings.TrimSpace(output(goCmd, "env", "GOVERSION")), "go"),
		NodeVersion:      strings.TrimPrefix(strings.TrimSpace(output("node", "--version")), "v"),
		Date:             time.Now().UTC().Format(time.RFC3339),
		LoadAverageStart: loadAverage(),
		Note: "a shared machine: other work may run at the same time, so the load averages and each result's " +
			"load_average_1m are recorded; a load above the core count means the benchmark did not have the CPU to itself",
	}
	if p, err := headless.Path(); err == nil {
		m.ChromiumVersion = strings.TrimSpace(output(p, "--version"))
	}
	return m
}

func cpuModel() string {
	data := readString("/proc/cpuinfo")
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func osName() string {
	sc := bufio.NewScanner(strings.NewReader(readString("/etc/os-release")))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
			return v
		}
	}
	return runtime.GOOS
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	f := strings.Fields(readString("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// loadAverage1m is the 1-minute load average, or 0.
func loadAverage1m() float64 {
	f := strings.Fields(loadAverage())
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// output is a command's standard output, or "" if it fails.
func output(name string, args ...string) string {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout = &out
	if cmd.Run() != nil {
		return ""
	}
	return out.String()
}
