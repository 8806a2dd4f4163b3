//go:build !linux && !js

package headless

import (
	"context"
	"errors"
)

// Renderer is the memory of one of the browser's renderer processes.
type Renderer struct {
	PID     int
	RSS     uint64
	PeakRSS uint64
	Anon    uint64
}

// Process is the memory of one of the browser's processes.
type Process struct {
	Renderer
	Type string
}

// Processes needs Linux's /proc.
func Processes(context.Context) ([]Process, error) {
	return nil, errors.New("headless: process memory is read from /proc (Linux only)")
}

// Renderers needs Linux's /proc.
func Renderers(context.Context) ([]Renderer, error) {
	return nil, errors.New("headless: renderer memory is read from /proc (Linux only)")
}

// ResetPeaks needs Linux's /proc.
func ResetPeaks(context.Context) error {
	return errors.New("headless: renderer memory is read from /proc (Linux only)")
}
