package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/onnxpart/onnxpart"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
)

const workloadHelp = "a phase of the workload the plan serves, NAME:DIM=SIZE,…@CALLS (repeatable), e.g. " +
	"--workload prefill:seq=512,past=0@1 --workload decode:seq=1,past=1024@128: one pipeline for every phase, " +
	"minimising the busiest stage's time per request; the stage files keep the dims symbolic"

const stateHelp = "state the model carries between calls, INPUT=OUTPUT (repeatable): the output of one call is " +
	"the input of the next and stays on its stage's device (KV cache pairs joined by a Concat are found without it)"

// loadPhases parses --workload and loads the model once per phase, at the --dim sizes with
// the phase's over them. The first phase's dims are the ones the model is planned at (first
// returned); nil phases without --workload.
func loadPhases(path string, list []string, dims map[string]int64, shapes map[string][]int64) ([]onnxpart.Phase, map[string]int64, error) {
	if len(list) == 0 {
		return nil, dims, nil
	}
	var phases []onnxpart.Phase
	seen := map[string]bool{}
	var first map[string]int64
	for _, s := range list {
		ph, err := onnxpart.ParsePhase(s)
		if err != nil {
			return nil, nil, diag.Wrap(diag.KindUsage, err).About(diag.Flag, "--workload")
		}
		if seen[ph.Name] {
			return nil, nil, diag.Usage("--workload %q: phase %s given twice", s, ph.Name).About(diag.Flag, "--workload")
		}
		seen[ph.Name] = true
		merged := maps.Clone(dims)
		if merged == nil {
			merged = map[string]int64{}
		}
		maps.Copy(merged, ph.Dims)
		m, err := ingest.Load(path, ingest.Options{Dims: merged, InputShapes: shapes, Names: ingestFlags})
		if err != nil {
			return nil, nil, fmt.Errorf("sizing the model for --workload %s: %w", ph.Name, err)
		}
		if err := m.RequireInputSizes(); err != nil {
			return nil, nil, fmt.Errorf("--workload %s: %w", ph.Name, err)
		}
		ph.Graph = m.Graph
		if first == nil {
			first = merged
		}
		phases = append(phases, ph)
	}
	return phases, first, nil
}

// parseStates reads --state INPUT=OUTPUT values.
func parseStates(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, s := range list {
		in, o, ok := strings.Cut(s, "=")
		if !ok || in == "" || o == "" {
			return nil, diag.Usage("--state %q: want INPUT=OUTPUT, e.g. past_key_values.0.key=present.0.key", s).About(diag.Flag, "--state")
		}
		if _, dup := out[in]; dup {
			return nil, diag.Usage("--state %q: input %s given twice", s, in).About(diag.Flag, "--state")
		}
		out[in] = o
	}
	return out, nil
}

// rate writes a rate with four significant digits (whole numbers from 1000 on).
func rate(r float64) string {
	if r >= 1000 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.4g", r)
}

// largestPhase is the phase whose tensors take the most bytes in all (the longest KV cache,
// the largest activations): without --max-dim, the stages' memory is checked at its dims.
func largestPhase(phases []onnxpart.Phase) *onnxpart.Phase {
	var best *onnxpart.Phase
	most := int64(-1)
	for i := range phases {
		var sum int64
		for _, t := range phases[i].Graph.Tensors {
			sum += max(t.Bytes, 0)
		}
		if sum > most {
			best, most = &phases[i], sum
		}
	}
	return best
}
