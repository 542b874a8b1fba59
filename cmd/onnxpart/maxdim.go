package main

import (
	"fmt"
	"maps"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
)

// maxDimGraph loads the model a second time with the --max-dim sizes over the --dim ones, so
// that every tensor (KV cache, activations) is sized by shape inference at the largest size a
// deployment runs; the plan's stage memory is checked on it. nil without --max-dim.
func maxDimGraph(path string, list []string, dims map[string]int64, shapes map[string][]int64) (*graph.Graph, error) {
	if len(list) == 0 {
		return nil, nil
	}
	maxDims, err := parseDims(list)
	if err != nil {
		return nil, diag.Usage("--max-dim: %v", err).About(diag.Flag, "--max-dim")
	}
	merged := maps.Clone(dims)
	if merged == nil {
		merged = map[string]int64{}
	}
	for name, size := range maxDims {
		if b, ok := dims[name]; ok && size < b {
			return nil, diag.Usage("--max-dim %s=%d is below --dim %s=%d", name, size, name, b).About(diag.Flag, "--max-dim")
		}
		merged[name] = size
	}
	m, err := ingest.Load(path, ingest.Options{Dims: merged, InputShapes: shapes, Names: ingestFlags})
	if err != nil {
		return nil, fmt.Errorf("sizing the model at --max-dim: %w", err)
	}
	return m.Graph, nil
}
