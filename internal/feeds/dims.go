package feeds

import (
	"maps"
	"slices"
	"strconv"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// DefaultDim is the size a symbolic dimension the stages kept takes when nothing binds it
// and the plan recorded no size for it.
const DefaultDim = 1

// Options say what sizes the symbolic dimensions of a run: the user's input files, whole
// input shapes and dims. Names are the caller's names of these fields for errors
// ("Inputs": "--input", "InputShapes": "--input-shape", "Dims": "--dim").
type Options struct {
	Inputs      map[string]string // model input name → .npy file
	InputShapes map[string][]int64
	Dims        map[string]int64
	Names       diag.Names
}

// Sizes are the sizes a run of a manifest's stages binds.
type Sizes struct {
	// Dims sizes every dimension the manifest records and every symbolic one the stages
	// kept.
	Dims map[string]int64
	// Set are the symbolic dims an input file, Options.InputShapes or Options.Dims sized.
	Set map[string]bool
	// Loose are the symbolic dims nothing sized: the size the plan recorded, else
	// DefaultDim, is a default only (ingest.Options.DefaultDims), so that a dim the model
	// ties to others (a decoder's total = past + seq) is derived from them.
	Loose map[string]bool
	// Given are the input files read, by model input.
	Given map[string]*npy.Array
	// InputShapes are Options.InputShapes and the shapes of the input files of inputs with
	// unnamed dimensions (they bind the whole input).
	InputShapes map[string][]int64
}

// Split returns the dims for ingest.Options: Dims (explicit) and DefaultDims (the loose
// ones).
func (s *Sizes) Split() (explicit, defaults map[string]int64) {
	explicit, defaults = map[string]int64{}, map[string]int64{}
	for k, x := range s.Dims {
		if s.Loose[k] {
			defaults[k] = x
		} else {
			explicit[k] = x
		}
	}
	return explicit, defaults
}

// Bind sizes the dims of a run of man's stages. Dims the stage files fixed keep the
// manifest's sizes; the ones they kept symbolic take the sizes of the input files, then of
// Options.InputShapes, then Options.Dims, then the size the plan bound them to
// (Manifest.Model.Dims), then DefaultDim. Those last two are loose (Sizes.Loose).
//
// Its errors are *diag.Error of kind usage about the option at fault: an input file or
// shape the model has no input for, of another type or rank, that contradicts the model's
// fixed dimensions or another file; a dim the stages do not keep symbolic, or that
// contradicts the input files.
func Bind(man *emit.Manifest, opt Options) (*Sizes, error) {
	names := opt.Names
	s := &Sizes{Dims: map[string]int64{}, Set: map[string]bool{}, Loose: map[string]bool{},
		Given: map[string]*npy.Array{}, InputShapes: opt.InputShapes}
	modelIn := map[string]emit.TensorRef{}
	for _, r := range man.Model.Inputs {
		modelIn[r.Name] = r
	}
	free := map[string]bool{}
	for _, d := range man.Model.SymbolicDims {
		free[d] = true
	}
	for k, v := range man.Model.Dims {
		if !free[k] {
			s.Dims[k] = v
		}
	}
	inputErr := func(name, format string, args ...any) *diag.Error {
		return diag.Usage("%s: "+format, append([]any{names.SayKey("Inputs", name, "")}, args...)...).About(diag.Option, names.Name("Inputs"))
	}
	for _, name := range slices.Sorted(maps.Keys(opt.Inputs)) {
		ref, ok := modelIn[name]
		if !ok {
			return nil, inputErr(name, "the model has no input %q", name)
		}
		a, err := npy.ReadFile(opt.Inputs[name])
		if err != nil {
			return nil, inputErr(name, "%v", err)
		}
		if a.DType.String() != ref.DType {
			return nil, inputErr(name, "the file holds %s, the model wants %s", a.DType, ref.DType)
		}
		if len(a.Shape) != len(ref.Shape) {
			return nil, inputErr(name, "the file's shape %v has rank %d, the model wants %s", a.Shape, len(a.Shape), graph.Shape(ref.Shape))
		}
		for i, d := range ref.Shape {
			switch {
			case d.Known() && d.Value != a.Shape[i]:
				return nil, inputErr(name, "the file's shape %v does not fit the model's %s", a.Shape, graph.Shape(ref.Shape))
			case !d.Known() && d.Param != "" && free[d.Param]:
				if v, ok := s.Dims[d.Param]; ok && v != a.Shape[i] {
					return nil, inputErr(name, "dimension %s is %d here but %d elsewhere", d.Param, a.Shape[i], v)
				}
				s.Dims[d.Param] = a.Shape[i]
				s.Set[d.Param] = true
			case !d.Known() && d.Param == "" && s.InputShapes[name] == nil:
				// An unnamed dimension: the file's shape binds the whole input.
				shapes := map[string][]int64{name: a.Shape}
				maps.Copy(shapes, s.InputShapes)
				s.InputShapes = shapes
			}
		}
		s.Given[name] = a
	}
	for _, name := range slices.Sorted(maps.Keys(s.InputShapes)) { // sizes the named dims it covers
		ref, ok := modelIn[name]
		shape := s.InputShapes[name]
		say := names.SayKey("InputShapes", name, "")
		switch {
		case !ok:
			return nil, diag.Usage("%s: the model has no input %q", say, name).About(diag.Option, names.Name("InputShapes"))
		case len(shape) != len(ref.Shape):
			return nil, diag.Usage("%s: rank %d, the model's input is %s", say, len(shape), graph.Shape(ref.Shape)).About(diag.Option, names.Name("InputShapes"))
		}
		for i, d := range ref.Shape {
			if !d.Known() && d.Param != "" && free[d.Param] {
				if v, ok := s.Dims[d.Param]; ok && v != shape[i] {
					return nil, diag.Usage("%s: dimension %s is %d here but %d elsewhere", say, d.Param, shape[i], v).About(diag.Option, names.Name("InputShapes"))
				}
				s.Dims[d.Param] = shape[i]
				s.Set[d.Param] = true
			}
		}
	}
	for _, d := range man.Model.SymbolicDims {
		if v, ok := opt.Dims[d]; ok {
			if w, bound := s.Dims[d]; bound && w != v {
				return nil, diag.Usage("%s contradicts the input files (%d)", names.SayKey("Dims", d, strconv.FormatInt(v, 10)), w).About(diag.Dim, d)
			}
			s.Dims[d] = v
			s.Set[d] = true
		} else if _, ok := s.Dims[d]; ok {
		} else if v, ok := man.Model.Dims[d]; ok {
			s.Dims[d] = v
		} else {
			s.Dims[d] = DefaultDim
		}
	}
	for _, d := range slices.Sorted(maps.Keys(opt.Dims)) {
		if !free[d] {
			return nil, diag.Usage("%s: not a symbolic dimension left in the stages (left: %v)", names.SayKey("Dims", d, ""), man.Model.SymbolicDims).About(diag.Dim, d)
		}
	}
	for _, d := range man.Model.SymbolicDims {
		if !s.Set[d] {
			s.Loose[d] = true
		}
	}
	return s, nil
}
