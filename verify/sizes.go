package verify

import (
	"fmt"

	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

// consistent returns dims, in which dim changed has just been moved off its bound size,
// with one other bound dim moved by as much (either way) when the model ties them in a way
// ingest does not derive (it derives a decoder's total = past + seq itself). The model's
// shape inference decides (ingest's ShapeErrors); when no single move mends them, dims
// come back as they were, and the original model's failure skips the size. Dims in keep
// (sized by the user, or derived) do not move; loose ones are ingest's DefaultDims.
func (v *verifier) consistent(dims map[string]int64, changed string, keep, loose map[string]bool) map[string]int64 {
	if v.shapeErrors(dims, loose) == 0 {
		return dims
	}
	delta := dims[changed] - v.man.Model.Dims[changed]
	for _, e := range v.man.Model.SymbolicDims { // sorted
		if _, bound := v.man.Model.Dims[e]; !bound || e == changed || keep[e] {
			continue
		}
		for _, dd := range []int64{delta, -delta} {
			try := map[string]int64{}
			for k, x := range dims {
				try[k] = x
			}
			try[e] += dd
			if try[e] >= 1 && v.shapeErrors(try, loose) == 0 {
				return try
			}
		}
	}
	return dims
}

// shapeErrors counts the shape inference errors of the original model at dims (1 when it
// does not load).
func (v *verifier) shapeErrors(dims map[string]int64, loose map[string]bool) int {
	m, err := loadAt(v.modelPath, dims, loose, v.opt.InputShapes)
	if err != nil {
		return 1
	}
	return len(m.ShapeErrors)
}

// loadAt loads the model with dims bound, those in loose as defaults that the model's ties
// to the others override (ingest's DefaultDims), and inputs' whole shapes bound by shapes.
func loadAt(path string, dims map[string]int64, loose map[string]bool, shapes map[string][]int64) (*ingest.Model, error) {
	explicit, defaults := map[string]int64{}, map[string]int64{}
	for k, x := range dims {
		if loose[k] {
			defaults[k] = x
		} else {
			explicit[k] = x
		}
	}
	return ingest.Load(path, ingest.Options{Dims: explicit, DefaultDims: defaults, InputShapes: shapes})
}

// secondSize is the size a dim bound for planning is verified at besides: 1 for a batch,
// else one less (a decoder planned at past=1024 must run at 1023), or 2 for a size of 1.
func secondSize(name string, bound int64, batch bool) int64 {
	switch {
	case batch && bound != 1:
		return 1
	case bound > 1:
		return bound - 1
	}
	return bound + 1
}

// sizeRunError is a failure at a second size: of the original model or of the sizes
// themselves (stage −1: the size is skipped, nothing blames the stages), or of a stage
// (the stage files do not serve the size).
type sizeRunError struct {
	dims  map[string]int64
	stage int
	err   error
}

func (e *sizeRunError) Error() string {
	if e.stage < 0 {
		return fmt.Sprintf("not run at %s: %v", outdir.DimList(e.dims), e.err)
	}
	return fmt.Sprintf("at %s, stage %d: %v", outdir.DimList(e.dims), e.stage, e.err)
}

func (e *sizeRunError) Unwrap() error { return e.err }
