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
}

// Renderers needs Linux's /proc.
func Renderers(context.Context) ([]Renderer, error) {
	return nil, errors.New("headless: renderer memory is read from /proc (Linux only)")
}

// ResetPeaks needs Linux's /proc.
func ResetPeaks(context.Context) error {
	return errors.New("headless: renderer memory is read from /proc (Linux only)")
}
