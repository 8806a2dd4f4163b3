//go:build !unix

package main

import "os"

// mapFile reads the file at path where files cannot be mapped: joining a
// split model then briefly holds it twice, as its parts and as the joined
// file.
func mapFile(path string) (data []byte, unmap func(), err error) {
	data, err = os.ReadFile(path)
	return data, func() {}, err
}
