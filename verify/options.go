package verify

import (
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// Options control Run.
type Options struct {
	// ModelPath is the original model (default: the manifest's model path).
	ModelPath string
	// Optimize runs ONNX Runtime with all graph optimizations; then outputs must agree within
	// Tolerance. Without it (ORT_DISABLE_ALL) they must be bit-identical.
	Optimize bool
	// Runs is the number of input sets (default 1); run r uses seed Seed+r.
	Runs int
	Seed int64
	// Inputs gives real data for model inputs: name → .npy file. Their shapes bind symbolic
	// dimensions; the other inputs are random.
	Inputs map[string]string
	// Dims binds symbolic dimensions the stages left symbolic; those not bound here or by
	// an input file are set to DefaultDim.
	Dims map[string]int64
	// Threads is ONNX Runtime's intra-op thread count for both runs (default 1).
	Threads int
	// Tolerance is the largest relative error accepted with Optimize for every floating-point
	// output, where relative error = max |chain − original| / max |original| over the
	// output's elements. Zero picks each output's by its type (DefaultToleranceFor). Integer
	// and bool outputs must always be bit-identical.
	Tolerance float64
	// InputShapes binds whole input shapes by input name, unnamed dimensions included
	// (ingest.Options.InputShapes; --input-shape).
	InputShapes map[string][]int64
	// Reference optionally caches the original model's sessions and outputs across calls
	// (e.g. when verifying many splits of one model).
	Reference *ReferenceCache
	// PlainReference compares float16 models against the unmodified original even where
	// ONNX Runtime skips float16 rounding (see Report.Reference); such chains then
	// differ by float16 rounding and fail.
	PlainReference bool
	// AllowSkipped accepts second sizes that could not be run (the original model itself
	// fails there, or a limit): without it, a skipped size makes Pass false, since the
	// stage files were not checked there.
	AllowSkipped bool
	// MaxTensorBytes bounds the size of every tensor verification holds in memory (random
	// inputs, stage boundaries, model outputs), checked from the declared shapes before
	// anything is allocated or run (default DefaultMaxTensorBytes).
	MaxTensorBytes int64
	// Names are the caller's names of these options, by field, for errors to name them
	// ("Dims": "--dim", "Inputs": "--input", "InputShapes": "--input-shape", "ModelPath":
	// "--model"); without them errors name the Go fields (Options.Dims["batch"]).
	Names diag.Names
}

// DefaultMaxTensorBytes is Run's default bound on one tensor's size: a model (or a
// --dim binding) declaring a larger input or boundary tensor is refused rather than
// allocated.
const DefaultMaxTensorBytes = 4 << 30

// checkTensorSizes refuses, before anything is allocated, tensors verification would hold
// over limit bytes: model inputs (made here unless given), tensors sent between stages,
// and model outputs.
func checkTensorSizes(g *graph.Graph, man *emit.Manifest, given map[string]*npy.Array, limit int64) error {
	check := func(name, what string) error {
		id, ok := g.TensorByName(name)
		if !ok {
			return nil
		}
		t := &g.Tensors[id]
		if !t.Shape.Known() {
			return nil
		}
		b, err := graph.ByteSize(t.DType, t.Shape)
		if err != nil {
			b = -1
		}
		if b < 0 && err == nil {
			return nil // no fixed size (strings)
		}
		if err != nil || b > limit {
			return feeds.SizeLimitError(name, what, t.DType, t.Shape, b, limit)
		}
		return nil
	}
	for _, id := range g.Inputs {
		if given[g.Tensors[id].Name] == nil {
			if err := check(g.Tensors[id].Name, "model input"); err != nil {
				return err
			}
		}
	}
	for _, tr := range man.Transfers {
		if err := check(tr.Tensor, "stage boundary tensor"); err != nil {
			return err
		}
	}
	for _, r := range man.Model.Outputs {
		if err := check(r.Name, "model output"); err != nil {
			return err
		}
	}
	return nil
}

// DefaultDim is the size Run gives a symbolic dimension nothing binds.
const DefaultDim = feeds.DefaultDim
