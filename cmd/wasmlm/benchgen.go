package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// ManifestFile names the file in a -gen directory that records what was
// generated, so a later -gen (and the benchmark harness) reuses the models
// that the same generator version wrote from the same spec.
const ManifestFile = "manifest.json"

// benchManifest is ManifestFile's content.
type benchManifest struct {
	ModelgenVersion int             `json:"modelgen_version"`
	Models          []manifestEntry `json:"models"`
}

// manifestEntry is one generated model.
type manifestEntry struct {
	Name  string        `json:"name"`  // <shape>-<type>
	Shape string        `json:"shape"` // stories15M, stories110M, tinyllama
	Type  string        `json:"type"`  // the spec's tensor type (see MatrixTypes)
	File  string        `json:"file"`  // Name + ".gguf", in the directory
	Size  int64         `json:"size"`
	Spec  modelgen.Spec `json:"spec"`
	// MatrixTypes counts the matrices by stored type, showing the K-quant
	// fallback where a row length is not a multiple of 256.
	MatrixTypes map[string]int `json:"matrix_types"`
}

// generateBenchModels writes the benchmark models of shapes (only those
// named in only, if it is not empty) into dir, keeping files the manifest
// says this generator version already wrote from the same spec.
func generateBenchModels(dir string, shapes, only []string, log io.Writer) error {
	all, err := modelgen.BenchModels(shapes...)
	if err != nil {
		return err
	}
	specs := all
	if len(only) > 0 {
		specs = nil
		for _, m := range all {
			if slices.Contains(only, m.Name) {
				specs = append(specs, m)
			}
		}
		for _, name := range only {
			if !slices.ContainsFunc(all, func(m modelgen.Model) bool { return m.Name == name }) {
				names := make([]string, len(all))
				for i, m := range all {
					names[i] = m.Name
				}
				return fmt.Errorf("no model %q among those of -shapes %s (they are: %s)", name, strings.Join(shapes, ","), strings.Join(names, ", "))
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	man := readManifest(dir)
	if man.ModelgenVersion != modelgen.Version {
		man = benchManifest{ModelgenVersion: modelgen.Version}
	}
	for _, m := range specs {
		i := man.find(m.Name)
		if i >= 0 && man.Models[i].current(dir, m.Spec) {
			fmt.Fprintf(log, "kept  %s (modelgen version %d)\n", filepath.Join(dir, man.Models[i].File), modelgen.Version)
			continue
		}
		start := time.Now()
		e, err := writeBenchModel(dir, m)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "wrote %s (%.1f MiB, %.1f s)\n", filepath.Join(dir, e.File), mb(uint64(e.Size)), time.Since(start).Seconds())
		if i >= 0 {
			man.Models[i] = e
		} else {
			man.Models = append(man.Models, e)
		}
		// Each model is written as soon as it exists, so an interrupted run keeps what it made.
		if err := man.write(dir); err != nil {
			return err
		}
	}
	return man.write(dir)
}

// writeBenchModel writes m to dir/<name>.gguf a tensor at a time (a model
// of gigabytes is never held whole), through a temporary file so a reader
// never sees half a model.
func writeBenchModel(dir string, m modelgen.Model) (manifestEntry, error) {
	e := manifestEntry{
		Name: m.Name, Shape: m.Shape, Type: m.Spec.Type.String(), File: m.Name + ".gguf",
		Spec: m.Spec, MatrixTypes: map[string]int{},
	}
	for _, cols := range matrixCols(m.Spec.Shape) {
		t, err := m.Spec.MatrixType(cols)
		if err != nil {
			return e, err
		}
		e.MatrixTypes[t.String()] += m.Spec.Layers
	}
	e.MatrixTypes[mustType(m.Spec, m.Spec.Dim)]++ // the token embedding (the output too, when tied)
	if m.Spec.SeparateOutput {
		e.MatrixTypes[mustType(m.Spec, m.Spec.Dim)]++
	}
	path := filepath.Join(dir, e.File)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return e, err
	}
	e.Size, err = modelgen.Write(f, m.Spec)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return e, fmt.Errorf("%s: %w", m.Name, err)
	}
	return e, os.Rename(tmp, path)
}

// matrixCols are the row lengths of a layer's seven matrices: q, k, v,
// gate and up read the embedding (Dim); o reads the attention heads (QDim:
// Dim unless the heads are wider, as Qwen3's); down reads the hidden layer.
func matrixCols(s modelgen.Shape) []int {
	return []int{s.Dim, s.Dim, s.Dim, s.QDim(), s.Dim, s.Dim, s.HiddenDim}
}

func mustType(sp modelgen.Spec, cols int) string {
	t, err := sp.MatrixType(cols)
	if err != nil {
		return "invalid"
	}
	return t.String()
}

func readManifest(dir string) benchManifest {
	var man benchManifest
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil || json.Unmarshal(data, &man) != nil {
		return benchManifest{}
	}
	return man
}

func (man *benchManifest) find(name string) int {
	for i, e := range man.Models {
		if e.Name == name {
			return i
		}
	}
	return -1
}

func (man *benchManifest) write(dir string) error {
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManifestFile), append(data, '\n'), 0o644)
}

// current reports whether e's file is in dir, whole, and made from spec.
func (e manifestEntry) current(dir string, spec modelgen.Spec) bool {
	st, err := os.Stat(filepath.Join(dir, e.File))
	if err != nil || st.Size() != e.Size {
		return false
	}
	a, errA := json.Marshal(e.Spec)
	b, errB := json.Marshal(spec)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}
