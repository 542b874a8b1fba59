package pipebench

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify"
)

// dims binds every symbolic dimension the stages kept. Dims the stage files fixed keep the
// manifest's sizes; --dim (Options.Dims) and the shapes of .npy inputs size the others.
// The sizes the manifest records for the rest, else verify.DefaultDim, are defaults only
// (ingest's DefaultDims): a dim the model ties to others (a decoder's total = past + seq)
// is derived from them instead, so that --dim past=0 alone runs a prefill. The ties are
// read from the original model when it is there (returned, for the inputs), else from the
// stage files. The derived dims are noted.
func (b *bench) dims(dir string, man *emit.Manifest) (map[string]int64, *ingest.Model, error) {
	sizes, err := feeds.Bind(man, feeds.Options{Inputs: b.opt.Inputs, Dims: b.opt.Dims, Names: b.opt.Names})
	if err != nil {
		return nil, nil, err
	}
	b.given = sizes.Given
	explicit, defaults := sizes.Split()

	modelPath := b.opt.ModelPath
	if modelPath == "" {
		modelPath = man.ModelFile(dir)
	}
	m, err := ingest.Load(modelPath, ingest.Options{Dims: explicit, DefaultDims: defaults})
	if err == nil && m.SHA256 == man.Model.SHA256 {
		b.derivedNote(m.DerivedNotes())
		return m.Dims(), m, nil
	}
	if b.opt.ModelPath != "" {
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, diag.Input("%s is not the model the stages were cut from (sha256 differs)", b.opt.Names.Say("ModelPath", b.opt.ModelPath)).About(diag.Option, b.opt.Names.Name("ModelPath"))
	}
	// Without the original model, each stage file whose inputs carry a dim not sized yet
	// settles its dims, with the sizes settled so far.
	dims := map[string]int64{}
	for k, v := range explicit {
		dims[k] = v
	}
	var notes []string
	for i, st := range man.Stages {
		has := map[string]bool{}
		open := false
		for _, in := range st.Inputs {
			for _, d := range in.Shape {
				if d.Param != "" && !d.Known() {
					has[d.Param] = true
					_, sized := dims[d.Param]
					open = open || !sized
				}
			}
		}
		if !open {
			continue
		}
		given, def := map[string]int64{}, map[string]int64{}
		for k, v := range dims {
			if has[k] {
				given[k] = v
			}
		}
		for k, v := range defaults {
			if _, sized := dims[k]; !sized && has[k] {
				def[k] = v
			}
		}
		sm, err := ingest.Load(filepath.Join(dir, st.File), ingest.Options{Dims: given, DefaultDims: def})
		if err != nil {
			return nil, nil, fmt.Errorf("stage %d: %w", i, err)
		}
		for k, v := range sm.Dims() {
			if has[k] {
				dims[k] = v
			}
		}
		for _, n := range sm.DerivedNotes() {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	for k, v := range defaults {
		if _, ok := dims[k]; !ok {
			dims[k] = v
		}
	}
	b.derivedNote(notes)
	return dims, nil, nil
}

// derivedNote notes the dims the model's ties derived (ingest's Model.DerivedNotes), once.
func (b *bench) derivedNote(notes []string) {
	if len(notes) == 0 {
		return
	}
	parts := make([]string, len(notes))
	for i, n := range notes {
		parts[i] = strings.TrimSuffix(n, " (derived)")
	}
	b.notes = append(b.notes, fmt.Sprintf("derived: %s (the model ties it to the other sizes)", strings.Join(parts, ", ")))
}

// tileFeeds repeats every model input n times along its leading axis (the batch).
func tileFeeds(set map[string]*ort.Tensor, inputs []emit.TensorRef, n int) map[string]*ort.Tensor {
	out := map[string]*ort.Tensor{}
	for k, v := range set {
		out[k] = v
	}
	for _, in := range inputs {
		v := set[in.Name]
		if v == nil || len(v.Shape) == 0 {
			continue
		}
		t := &ort.Tensor{DType: v.DType, Shape: append([]int64{}, v.Shape...), Data: bytes.Repeat(v.Data, n)}
		t.Shape[0] *= int64(n)
		out[in.Name] = t
	}
	return out
}

// bind returns the concrete shape of s with dims bound; ok is false when a dimension stays
// unknown.
func bind(s emit.Shape, dims map[string]int64) ([]int64, bool) {
	if s == nil {
		return nil, false
	}
	out := make([]int64, len(s))
	for i, d := range s {
		switch {
		case d.Known():
			out[i] = d.Value
		case d.Param != "" && dims[d.Param] > 0:
			out[i] = dims[d.Param]
		default:
			return nil, false
		}
	}
	return out, true
}

// makeFeeds makes inputSets input sets: real data where given, else random as verify makes
// them from the original model (orig, loaded at dims; or, when it is not there, from the
// stage files that read each input).
func (b *bench) makeFeeds(dir string, man *emit.Manifest, dims map[string]int64, orig *ingest.Model) error {
	given := map[string]*ort.Tensor{}
	for name, a := range b.given {
		given[name] = &ort.Tensor{DType: a.DType, Shape: a.Shape, Data: a.Data}
	}
	var graphs []*graph.Graph
	if orig != nil {
		graphs = []*graph.Graph{orig.Graph}
	} else {
		// Each model input from the first stage that reads it.
		loaded := map[int]bool{}
		for _, in := range man.Model.Inputs {
			for i, st := range man.Stages {
				reads := false
				for _, r := range st.Inputs {
					reads = reads || r.Name == in.Name
				}
				if !reads || loaded[i] {
					continue
				}
				loaded[i] = true
				// only the dims the stage's inputs carry: a dim the model derives (a
				// decoder's total = past + seq) may be absent from a later stage's inputs
				sd := map[string]int64{}
				for _, r := range st.Inputs {
					for _, d := range r.Shape {
						if v, ok := dims[d.Param]; ok && d.Param != "" {
							sd[d.Param] = v
						}
					}
				}
				m, err := ingest.Load(filepath.Join(dir, st.File), ingest.Options{Dims: sd})
				if err != nil {
					return fmt.Errorf("stage %d: %w", i, err)
				}
				graphs = append(graphs, m.Graph)
				break
			}
		}
	}
	for k := range inputSets {
		set := map[string]*ort.Tensor{}
		for _, g := range graphs {
			f, err := feeds.Random(g, b.opt.Seed+int64(k), verify.DefaultMaxTensorBytes, nil, b.opt.Names)
			if err != nil {
				return diag.Wrap(diag.KindInput, err)
			}
			for n, v := range f {
				if _, ok := set[n]; !ok {
					set[n] = v
				}
			}
		}
		for n, v := range given {
			set[n] = v
		}
		for _, r := range man.Model.Inputs {
			if set[r.Name] == nil {
				return diag.Input("no value for model input %q", r.Name).About(diag.Tensor, r.Name)
			}
		}
		b.feeds = append(b.feeds, set)
	}
	return nil
}
