package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/outdir"
	"github.com/onnxpart/onnxpart/onnxpb"
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

// DefaultTolerance is the relative error accepted when optimizations are enabled, for
// float32 and float64 outputs (and float types not named below).
const DefaultTolerance = 1e-4

// Float16Tolerance and BFloat16Tolerance are the relative errors accepted with
// optimizations for float16 and bfloat16 outputs. Optimizations move the points where a
// half-precision graph rounds (fused operators compute in float32 and round once; ONNX
// Runtime's casts around operators without float16 kernels appear and vanish), so chain
// and original differ by rounding alone. Each rounding costs up to half an epsilon of the
// value rounded (float16: epsilon 2⁻¹⁰ ≈ 9.77e-4; bfloat16: 2⁻⁷ ≈ 7.8e-3), and the error is
// measured against the output's largest magnitude (not element by element, so values near 0
// do not inflate it); a handful of such roundings carried through the layers gives a few
// epsilons. Both tolerances are 10.24 epsilons (1e-2 and 8e-2): room for that, while a
// wrong weight or a miswired tensor moves outputs by a good fraction of their scale.
const (
	Float16Tolerance  = 1e-2
	BFloat16Tolerance = 8e-2
)

// DefaultToleranceFor is the relative error accepted with optimizations for an output of
// type dt when none is given: 0 (bit-identical) for types that are not floating-point.
func DefaultToleranceFor(dt graph.DType) float64 {
	switch {
	case !dt.IsFloat():
		return 0
	case dt == graph.Float16:
		return Float16Tolerance
	case dt == graph.BFloat16:
		return BFloat16Tolerance
	}
	return DefaultTolerance
}

// toleranceFor is the relative error accepted for an output of type dt: 0 without
// optimizations or for a type that is not floating-point, else the given tolerance, or the
// type's default.
func toleranceFor(dt graph.DType, optimize bool, given float64) float64 {
	switch {
	case !optimize || !dt.IsFloat():
		return 0
	case given > 0:
		return given
	}
	return DefaultToleranceFor(dt)
}

// computedTolerance is the loosest default tolerance of the floating-point tensors tensor t
// is computed from (its own and every ancestor's, graph inputs and weights included): an
// output is only as precise as the least precise float type on its way, as a float32 output
// that a float16 graph casts up at its end.
func computedTolerance(g *graph.Graph, t int) float64 {
	tol := 0.0
	seen := map[int]bool{t: true}
	stack := []int{t}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if dt := g.Tensors[x].DType; dt.IsFloat() {
			tol = math.Max(tol, DefaultToleranceFor(dt))
		}
		p := g.Tensors[x].Producer
		if p < 0 {
			continue
		}
		for _, in := range g.Nodes[p].Deps() {
			if !seen[in] {
				seen[in] = true
				stack = append(stack, in)
			}
		}
	}
	return tol
}

// Report is the outcome of Run.
type Report struct {
	Model    string           `json:"model"`
	Stages   int              `json:"stages"`
	Optimize bool             `json:"optimize"`
	Runs     int              `json:"runs"`
	Seed     int64            `json:"seed"`
	Dims     map[string]int64 `json:"dims"`
	// DerivedDims are the dims among Dims that follow from the others through the model's
	// ties (ingest's Model.DerivedDims: a decoder's total = past + seq), with the
	// expression each was derived as; they are never given a second size of their own. Not
	// in the JSON form (verify.v1 has no field for it; Dims holds their sizes).
	DerivedDims map[string]string `json:"-"`
	// Inputs says how each model input was made.
	Inputs []InputReport `json:"inputs"`
	// Reference says what the chain was compared with: "original model", or, for a model
	// whose float16 tensors cross stage boundaries, the original model with those tensors
	// rounded to float16 as its types require. ONNX Runtime's CPU provider computes float16
	// graphs in float32 between operators that lack float16 kernels and drops the rounding
	// in between (InsertCastTransformer, RemoveDuplicateCastTransformer; not configurable),
	// so the unmodified model never rounds where a stage boundary must.
	Reference string `json:"reference"`
	// Rounded lists those float16 boundary tensors.
	Rounded []string `json:"rounded,omitempty"`
	// Outputs holds, per model output in model order, the worst agreement over the runs.
	Outputs []OutputReport `json:"outputs"`
	// Plain, when the reference rounds float16 boundaries, compares the chain with the
	// unmodified original (for information; it does not decide Pass).
	Plain []OutputReport `json:"plain,omitempty"`
	// Tolerance is the largest relative error accepted for any output (each output's own is
	// OutputReport.Tolerance); 0 without Optimize.
	Tolerance float64 `json:"tolerance"`
	// Pass is true when every output agreed: bit for bit without Optimize, within Tolerance
	// with it (and, with Routes, every route passed).
	Pass bool `json:"pass"`
	// OtherSizes holds, when the stage files keep dims the plan bound (Model.Dims ∩
	// SymbolicDims), the runs at a second size of each such dim nothing else sized: 1 for a
	// batch, else one less. This report's Dims are the bound sizes.
	OtherSizes []*Report `json:"other_sizes,omitempty"`
	// Skipped says why a second size was not run (the original model itself fails there, or
	// the sizes break a limit); Problem, that a stage failed there (Pass false).
	Skipped string `json:"skipped,omitempty"`
	Problem string `json:"problem,omitempty"`
	// SkippedSizes counts the OtherSizes that were skipped; they count against Pass unless
	// Options.AllowSkipped, and AllowSkipped records that.
	SkippedSizes int  `json:"skipped_sizes,omitempty"`
	AllowSkipped bool `json:"allow_skipped,omitempty"`
	// Routes holds the reports of a batched plan's other routes (Manifest.Batch), each in its
	// subdirectory Dir.
	Routes []*Report `json:"routes,omitempty"`
	Dir    string    `json:"dir,omitempty"`
}

// InputReport describes one model input of a verification.
type InputReport struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Source string  `json:"source"` // "random [lo,hi) (why)" or the .npy file
}

// OutputReport compares one model output.
type OutputReport struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	// MaxAbs and MaxRel are the largest absolute and relative (to max |original|) errors.
	MaxAbs float64 `json:"max_abs"`
	MaxRel float64 `json:"max_rel"`
	// Differing counts elements whose bits differ, of Elements.
	Differing int64 `json:"differing"`
	Elements  int64 `json:"elements"`
	BitExact  bool  `json:"bit_exact"`
	// Tolerance is the largest MaxRel accepted: 0 when the output must be bit-identical
	// (optimizations off, or a type that is not floating-point).
	Tolerance float64 `json:"tolerance"`
	Pass      bool    `json:"pass"`
	// Problem is set when the output could not be compared (shape or type mismatch).
	Problem string `json:"problem,omitempty"`
}

// ReferenceCache keeps the original model's ONNX Runtime sessions and outputs so that
// verifying several splits of one model loads and runs it once per input set.
type ReferenceCache struct {
	sessions map[string]*ort.Session
	outputs  map[string]map[string]*ort.Tensor
}

// NewReferenceCache makes an empty cache; Close releases its sessions.
func NewReferenceCache() *ReferenceCache {
	return &ReferenceCache{sessions: map[string]*ort.Session{}, outputs: map[string]map[string]*ort.Tensor{}}
}

// Close releases the cached sessions.
func (c *ReferenceCache) Close() {
	for _, s := range c.sessions {
		s.Close()
	}
	c.sessions = map[string]*ort.Session{}
	c.outputs = map[string]map[string]*ort.Tensor{}
}

// MismatchOf is the error for a failed comparison, for callers that treat one as an error
// (Run itself reports it through Report.Pass): a *diag.Error of kind mismatch whose message
// names the outputs that differ and whose cause is a *Mismatch holding the report.
func MismatchOf(rep *Report) *diag.Error {
	return diag.Wrap(diag.KindMismatch, &Mismatch{Report: rep})
}

// Mismatch is the cause of MismatchOf's error: the report of the failed comparison.
type Mismatch struct{ Report *Report }

// Error names the outputs that differ.
func (e *Mismatch) Error() string {
	bad := outputProblems(e.Report)
	for _, o := range e.Report.OtherSizes {
		switch {
		case o.Problem != "":
			bad = append(bad, o.Problem)
		case !o.Pass:
			bad = append(bad, "at "+outdir.DimList(o.Dims)+": "+strings.Join(outputProblems(o), ", "))
		}
	}
	return "the stages do not reproduce the model: " + strings.Join(bad, ", ")
}

// outputProblems names the outputs of rep that differ.
func outputProblems(rep *Report) []string {
	var bad []string
	for _, o := range rep.Outputs {
		if !o.Pass {
			if o.Problem != "" {
				bad = append(bad, fmt.Sprintf("%s (%s)", o.Name, o.Problem))
			} else {
				bad = append(bad, fmt.Sprintf("%s (max abs %.3g, max rel %.3g)", o.Name, o.MaxAbs, o.MaxRel))
			}
		}
	}
	return bad
}

// Run checks dir structurally (Check), then runs the original model and the chain of
// stages in ONNX Runtime on the same inputs, feeding each stage by tensor name from a pool
// holding the model inputs and every earlier stage's outputs, and compares every model
// output. It returns an error when something cannot be run; a disagreement is reported in
// the report (Pass false; MismatchOf makes it an error).
//
// A batched plan's manifest lists routes (Manifest.Batch.Routes): each route in its own
// subdirectory is verified the same way, and reported in Routes.
//
// Its errors are *diag.Error: kind usage for inputs or sizes the model refuses (a bad
// --input file, --input-shape or --dim, an input nothing sizes), kind input for everything
// else that stops it (a bad output directory, a missing or different original model, a
// failure of ONNX Runtime), kind interrupted when ctx is cancelled.
func Run(ctx context.Context, dir string, opt Options) (*Report, error) {
	rep, err := run(ctx, dir, opt)
	var de *diag.Error
	if err != nil && !errors.As(err, &de) && !errors.Is(err, context.Canceled) {
		err = diag.Wrap(diag.KindInput, err)
	}
	return rep, err
}

func run(ctx context.Context, dir string, opt Options) (*Report, error) {
	rep, err := verifyDir(ctx, dir, opt)
	if err != nil {
		return nil, err
	}
	man, err := emit.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if man.Batch == nil {
		return rep, nil
	}
	for _, rt := range man.Batch.Routes {
		if rt.Dir == "." {
			continue
		}
		if !routeDirOK(rt.Dir) {
			return nil, checkErr(dir, []string{fmt.Sprintf("manifest.json: route %d's directory %q is not a plain subdirectory name", rt.Index, rt.Dir)})
		}
		sub, err := verifyDir(ctx, filepath.Join(dir, rt.Dir), opt)
		if err != nil {
			return nil, fmt.Errorf("route %d (%s): %w", rt.Index, rt.Dir, err)
		}
		sub.Dir = rt.Dir
		rep.Routes = append(rep.Routes, sub)
		rep.Pass = rep.Pass && sub.Pass
	}
	return rep, nil
}

// routeDirOK accepts a route directory name: one plain path element.
func routeDirOK(d string) bool {
	return d != "" && d != "." && d != ".." && !strings.ContainsAny(d, `/\:`) && !strings.ContainsRune(d, 0)
}

func verifyDir(ctx context.Context, dir string, opt Options) (*Report, error) {
	man, err := Check(dir)
	if err != nil {
		return nil, err
	}
	if opt.Runs <= 0 {
		opt.Runs = 1
	}
	if opt.Tolerance < 0 {
		opt.Tolerance = 0
	}
	if opt.MaxTensorBytes <= 0 {
		opt.MaxTensorBytes = DefaultMaxTensorBytes
	}
	modelPath := opt.ModelPath
	if modelPath == "" {
		modelPath = man.ModelFile(dir)
	}
	if err := checkModelFile(modelPath, man, opt.Names); err != nil {
		return nil, err
	}
	// Dims the stage files fixed keep the manifest's sizes; the ones they keep symbolic
	// take the sizes of the input files, then --dim, then the size the plan bound them to
	// (Model.Dims), then DefaultDim. Those last two are loose: a dim the model ties to
	// others (a decoder's total = past + seq) is derived from them instead (ingest's
	// DefaultDims), so that --dim past=0 alone verifies a prefill.
	sizes, err := feeds.Bind(man, feeds.Options{Inputs: opt.Inputs, InputShapes: opt.InputShapes, Dims: opt.Dims, Names: opt.Names})
	if err != nil {
		return nil, err
	}
	opt.InputShapes = sizes.InputShapes
	given, dims, set, loose := sizes.Given, sizes.Dims, sizes.Set, sizes.Loose

	v := &verifier{dir: dir, man: man, modelPath: modelPath, opt: opt, given: given,
		sopt: ort.Options{Optimize: opt.Optimize, Threads: opt.Threads, LowMemory: man.Model.ParamsBytes >= lowMemoryBytes}, ref: opt.Reference}
	if v.ref == nil {
		v.ref, v.ownRef = NewReferenceCache(), true
		defer v.ref.Close()
	}
	rep, err := v.runAt(ctx, dims, loose, false)
	if err != nil {
		return nil, err
	}
	rep.AllowSkipped = opt.AllowSkipped
	// A plan made at bound sizes whose stage files kept the dims symbolic must serve other
	// sizes too: each such dim nothing else sized is run again at a second size.
	// A derived dim has no size of its own: it moves with the dims it follows.
	keep := map[string]bool{}
	for d := range set {
		keep[d] = true
	}
	for d := range rep.DerivedDims {
		keep[d] = true
	}
	for _, d := range man.Model.SymbolicDims {
		bound, ok := man.Model.Dims[d]
		if !ok || keep[d] {
			continue
		}
		other := map[string]int64{}
		for k, x := range dims {
			other[k] = x
		}
		other[d] = secondSize(d, bound, emit.BatchDim(man) == d)
		otherLoose := map[string]bool{}
		for k := range loose {
			otherLoose[k] = k != d
		}
		other = v.consistent(other, d, keep, otherLoose)
		sub, err := v.runAt(ctx, other, otherLoose, true)
		var re *sizeRunError
		switch {
		case errors.As(err, &re) && re.stage < 0:
			sub = &Report{Model: modelPath, Stages: len(man.Stages), Optimize: opt.Optimize, Runs: opt.Runs, Seed: opt.Seed,
				Dims: re.dims, Tolerance: rep.Tolerance, Pass: opt.AllowSkipped, Skipped: re.Error()}
			rep.SkippedSizes++
		case errors.As(err, &re):
			sub = &Report{Model: modelPath, Stages: len(man.Stages), Optimize: opt.Optimize, Runs: opt.Runs, Seed: opt.Seed,
				Dims: re.dims, Tolerance: rep.Tolerance, Problem: re.Error()}
		case err != nil:
			return nil, err
		}
		rep.OtherSizes = append(rep.OtherSizes, sub)
		rep.Pass = rep.Pass && sub.Pass
	}
	return rep, nil
}

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

// verifier holds what every size of one verification shares.
type verifier struct {
	dir, modelPath string
	man            *emit.Manifest
	opt            Options
	given          map[string]*npy.Array
	sopt           ort.Options
	ref            *ReferenceCache
	// ownRef is set when ref is Run's own, not the caller's: its sessions are closed as
	// soon as they have served.
	ownRef bool
	// second is set while a second size runs: its failures come back as *sizeRunError.
	second bool
}

// runAt runs the original model and the chain with every dimension bound to dims (those in
// loose unless the model derives them from the others); second marks a second size, whose
// failures come back as *sizeRunError.
func (v *verifier) runAt(ctx context.Context, dims map[string]int64, loose map[string]bool, second bool) (*Report, error) {
	v.second = second
	man, opt, given, modelPath := v.man, v.opt, v.given, v.modelPath
	// The model with every dimension bound gives every boundary tensor's concrete shape.
	m, err := loadAt(modelPath, dims, loose, opt.InputShapes)
	if err != nil && !second && diag.KindOf(err) == diag.KindUsage {
		return nil, err // sizes that contradict each other
	}
	if err != nil {
		return nil, v.fail(dims, -1, err)
	}
	sized := map[string]int64{}
	for k, x := range dims {
		sized[k] = x
	}
	for k, x := range m.Dims() {
		sized[k] = x
	}
	dims = sized
	g := m.Graph
	for _, id := range g.Inputs {
		if t := &g.Tensors[id]; given[t.Name] == nil && !t.Shape.Known() {
			return nil, v.fail(dims, -1, unboundInputError(t, opt.Names))
		}
	}
	if err := checkTensorSizes(g, man, given, opt.MaxTensorBytes); err != nil {
		return nil, v.fail(dims, -1, err)
	}
	givenNames := map[string]bool{}
	for name := range given {
		givenNames[name] = true
	}
	rep := &Report{Model: modelPath, Stages: len(man.Stages), Optimize: opt.Optimize, Runs: opt.Runs,
		Seed: opt.Seed, Dims: dims, DerivedDims: m.DerivedDims}
	ranges := feeds.Ranges(g)
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		ir := InputReport{Name: t.Name, DType: t.DType.String(), Shape: t.Shape.Dims()}
		if a := given[t.Name]; a != nil {
			ir.Source = opt.Inputs[t.Name]
		} else if r, ok := ranges[t.Name]; ok {
			if t.DType.IsFloat() {
				ir.Source = fmt.Sprintf("random [%g,%g) (%s)", r.Lo, r.Hi, r.Why)
			} else {
				if r.Hi-r.Lo == 1 {
					ir.Source = fmt.Sprintf("all %g (%s)", r.Lo, r.Why)
				} else {
					ir.Source = fmt.Sprintf("random integers [%g,%g) (%s)", r.Lo, r.Hi, r.Why)
				}
			}
		}
		rep.Inputs = append(rep.Inputs, ir)
	}
	hints := func(names []string) map[string]ort.OutputHint {
		h := map[string]ort.OutputHint{}
		for _, n := range names {
			if id, ok := g.TensorByName(n); ok && g.Tensors[id].Shape.Known() {
				h[n] = ort.OutputHint{DType: g.Tensors[id].DType, Shape: g.Tensors[id].Shape.Dims()}
			}
		}
		return h
	}
	sopt := v.sopt
	var inNames, outNames []string
	for _, r := range man.Model.Inputs {
		inNames = append(inNames, r.Name)
	}
	for _, r := range man.Model.Outputs {
		outNames = append(outNames, r.Name)
	}
	// Every run's inputs first: the model's sessions are then loaded one at a time and each
	// serves every run, so that no two copies of the weights are ever held at once.
	runFeeds := make([]map[string]*ort.Tensor, opt.Runs)
	for run := range runFeeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := feeds.Random(g, opt.Seed+int64(run), opt.MaxTensorBytes, givenNames, opt.Names)
		if err != nil {
			return nil, v.fail(dims, -1, err)
		}
		for name, a := range given {
			f[name] = &ort.Tensor{DType: a.DType, Shape: a.Shape, Data: a.Data}
		}
		runFeeds[run] = f
	}
	outHints := hints(outNames)
	// The original model (possibly cached), then, for float16 boundaries, the rounding
	// reference.
	plainKey := fmt.Sprintf("%s\x00%s\x00%v\x00%d\x00%v", absPath(modelPath), man.Model.SHA256, opt.Optimize, opt.Threads, outdir.DimList(dims))
	orig, err := v.reference(ctx, plainKey, runFeeds, inNames, outHints, func() (*ort.Session, error) {
		return ort.NewSession(modelPath, inNames, outNames, sopt)
	})
	if err != nil {
		return nil, v.fail(dims, -1, err)
	}
	rep.Reference = "original model"
	want, plainWant := orig, [](map[string]*ort.Tensor)(nil)
	if rounded := halfBoundaries(g, man); len(rounded) > 0 && !opt.PlainReference {
		rep.Reference = fmt.Sprintf("original model with its %d float16 stage-boundary tensors rounded to float16", len(rounded))
		rep.Rounded = rounded
		key := plainKey + "\x00rounded\x00" + strings.Join(rounded, "\x00")
		want, err = v.reference(ctx, key, runFeeds, inNames, outHints, func() (*ort.Session, error) {
			s, err := roundedReference(m, man, rounded, inNames, outNames, sopt)
			if err != nil {
				return nil, fmt.Errorf("building the float16 reference: %w", err)
			}
			return s, nil
		})
		if err != nil {
			return nil, v.fail(dims, -1, err)
		}
		plainWant = orig
	}
	// The stages one at a time, each over every run, dropping the tensors no later stage
	// or model output needs.
	pools := make([]map[string]*ort.Tensor, opt.Runs)
	for run := range pools {
		pools[run] = map[string]*ort.Tensor{}
		for k, t := range runFeeds[run] {
			pools[run][k] = t
		}
	}
	for i, st := range man.Stages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var outs []string
		for _, r := range st.Outputs {
			outs = append(outs, r.Name)
		}
		s, err := v.openStage(i)
		if err != nil {
			return nil, v.fail(dims, i, err)
		}
		for run := range pools {
			res, err := s.Run(pools[run], hints(outs))
			if err != nil {
				s.Close()
				return nil, v.fail(dims, i, err)
			}
			for k, t := range res {
				pools[run][k] = t
			}
		}
		s.Close()
		needed := map[string]bool{}
		for _, n := range outNames {
			needed[n] = true
		}
		for _, later := range man.Stages[i+1:] {
			for _, r := range later.Inputs {
				needed[r.Name] = true
			}
		}
		for _, pool := range pools {
			for k := range pool {
				if !needed[k] {
					delete(pool, k)
				}
			}
		}
	}
	worst := make([]OutputReport, len(outNames))
	plain := make([]OutputReport, len(outNames))
	tols := make([]float64, len(outNames))
	for i, r := range man.Model.Outputs {
		dt, ok := graph.ParseDType(r.DType)
		if id, found := g.TensorByName(r.Name); !ok && found {
			dt = g.Tensors[id].DType
		}
		tols[i] = toleranceFor(dt, opt.Optimize, opt.Tolerance)
		if id, found := g.TensorByName(r.Name); found && tols[i] > 0 && opt.Tolerance <= 0 {
			// A float32 output computed through float16 carries float16's rounding.
			tols[i] = math.Max(tols[i], computedTolerance(g, id))
		}
		rep.Tolerance = math.Max(rep.Tolerance, tols[i])
		worst[i] = OutputReport{Name: r.Name, DType: r.DType, BitExact: true, Tolerance: tols[i], Pass: true}
		plain[i] = worst[i]
	}
	for run := range pools {
		for i, name := range outNames {
			worst[i] = worse(worst[i], compareOutput(name, want[run][name], pools[run][name], tols[i]))
			if plainWant != nil {
				plain[i] = worse(plain[i], compareOutput(name, plainWant[run][name], pools[run][name], tols[i]))
			}
		}
	}
	rep.Outputs = worst
	if plainWant != nil {
		rep.Plain = plain
	}
	rep.Pass = true
	for _, o := range worst {
		rep.Pass = rep.Pass && o.Pass
	}
	return rep, nil
}

// reference returns the outputs of a reference session (under key in the cache) for every
// run's feeds, opening it with open when the cache lacks them. A cache Run made itself
// keeps neither the session nor the outputs past this size: only the caller's cache
// (Options.Reference) spans calls.
func (v *verifier) reference(ctx context.Context, key string, feeds []map[string]*ort.Tensor, inNames []string, hints map[string]ort.OutputHint, open func() (*ort.Session, error)) ([]map[string]*ort.Tensor, error) {
	c := v.ref
	out := make([]map[string]*ort.Tensor, len(feeds))
	for run, f := range feeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := c.sessions[key]
		if s == nil {
			var err error
			if s, err = open(); err != nil {
				return nil, err
			}
			c.sessions[key] = s
		}
		res, err := c.run(key, s, f, inNames, hints)
		if err != nil {
			return nil, fmt.Errorf("original model: %w", err)
		}
		out[run] = res
	}
	if v.ownRef {
		if s := c.sessions[key]; s != nil {
			s.Close()
			delete(c.sessions, key)
		}
		c.outputs = map[string]map[string]*ort.Tensor{}
	}
	return out, nil
}

// openStage loads stage i's session.
func (v *verifier) openStage(i int) (*ort.Session, error) {
	st := v.man.Stages[i]
	var ins, outs []string
	for _, r := range st.Inputs {
		ins = append(ins, r.Name)
	}
	for _, r := range st.Outputs {
		outs = append(outs, r.Name)
	}
	return ort.NewSession(filepath.Join(v.dir, st.File), ins, outs, v.sopt)
}

// unboundInputError says how to size an input whose shape still has unknown dimensions, with
// the caller's names of the options that do (Options.Names).
func unboundInputError(t *graph.Tensor, names diag.Names) *diag.Error {
	var named []string
	example := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		switch {
		case d.Known():
			example[i] = fmt.Sprint(d.Value)
		case d.Param != "":
			named = append(named, d.Param)
			example[i] = "1"
		default:
			example[i] = "1"
		}
	}
	how := fmt.Sprintf("give its whole shape with %s (e.g.), or real data with %s", names.SayKey("InputShapes", t.Name, strings.Join(example, "x")), names.SayKey("Inputs", t.Name, "FILE.npy"))
	if len(named) > 0 {
		how = fmt.Sprintf("size %s with %s (e.g. %s), ", strings.Join(named, ", "), names.SayKey("Dims", "NAME", "SIZE"), names.SayKey("Dims", named[0], "1")) + how
	} else {
		how += fmt.Sprintf(" (%s sizes only named dimensions; these have no name)", names.SayKey("Dims", "NAME", "SIZE"))
	}
	return diag.Usage("input %q has shape %s with dimensions nothing sizes: %s", t.Name, t.Shape, how).About(diag.Tensor, t.Name)
}

// fail wraps an error of a second size (stage −1: not the stages' fault).
func (v *verifier) fail(dims map[string]int64, stage int, err error) error {
	if !v.second {
		if stage >= 0 {
			return fmt.Errorf("stage %d: %w", stage, err)
		}
		return err
	}
	return &sizeRunError{dims: dims, stage: stage, err: err}
}

// lowMemoryBytes is the model weight size from which verification runs ONNX Runtime in its
// low-memory mode (ort.Options.LowMemory): no arena, no pre-packed weight copies.
const lowMemoryBytes = 512 << 20

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// checkModelFile checks that the model at path is the one the stages were cut from; names
// are the caller's names of the options (Options.Names: "ModelPath").
func checkModelFile(path string, man *emit.Manifest, names diag.Names) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return diag.Input("original model %s not found (give it with %s)", path, names.Name("ModelPath")).About(diag.Option, names.Name("ModelPath"))
		}
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != man.Model.SHA256 {
		return diag.Input("%s has sha256 %s, but the stages were made from a model with sha256 %s (%s)", path, short(got), short(man.Model.SHA256), man.Model.Path).About(diag.Option, names.Name("ModelPath"))
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// run runs the original model, reusing an earlier result for identical inputs.
func (c *ReferenceCache) run(key string, s *ort.Session, feeds map[string]*ort.Tensor, inNames []string, hints map[string]ort.OutputHint) (map[string]*ort.Tensor, error) {
	h := sha256.New()
	io.WriteString(h, key)
	for _, n := range inNames {
		t := feeds[n]
		if t == nil {
			continue
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00%v\x00", n, t.DType, t.Shape)
		h.Write(t.Data)
	}
	k := hex.EncodeToString(h.Sum(nil))
	if out, ok := c.outputs[k]; ok {
		return out, nil
	}
	out, err := s.Run(feeds, hints)
	if err != nil {
		return nil, err
	}
	c.outputs[k] = out
	return out, nil
}

// compareOutput compares the chain's value of an output with the original's.
// tol is the largest relative error accepted (toleranceFor); 0 asks for identical bits.
func compareOutput(name string, want, got *ort.Tensor, tol float64) OutputReport {
	o := OutputReport{Name: name, BitExact: true, Tolerance: tol, Pass: true}
	switch {
	case want == nil:
		o.Problem, o.Pass, o.BitExact = "the original model did not return it", false, false
		return o
	case got == nil:
		o.Problem, o.Pass, o.BitExact = "no stage returned it", false, false
		return o
	}
	o.DType, o.Shape = want.DType.String(), want.Shape
	o.Elements = want.Elements()
	if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) {
		o.Problem = fmt.Sprintf("the chain gives %s %v, the model %s %v", got.DType, got.Shape, want.DType, want.Shape)
		o.Pass, o.BitExact = false, false
		return o
	}
	if bytes.Equal(got.Data, want.Data) {
		return o
	}
	o.BitExact = false
	size := int64(want.DType.Bits() / 8)
	if size > 0 {
		for i := int64(0); i+size <= int64(len(want.Data)); i += size {
			if !bytes.Equal(want.Data[i:i+size], got.Data[i:i+size]) {
				o.Differing++
			}
		}
	}
	wv, err1 := decodeFloats(want.DType, want.Data)
	gv, err2 := decodeFloats(got.DType, got.Data)
	if err1 != nil || err2 != nil {
		o.Problem, o.Pass = "values differ and cannot be compared numerically", false
		return o
	}
	var maxRef float64
	for _, v := range wv {
		if a := math.Abs(v); a > maxRef && !math.IsInf(a, 0) && !math.IsNaN(a) {
			maxRef = a
		}
	}
	for i := range wv {
		a, b := wv[i], gv[i]
		var d float64
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
		case math.IsNaN(a) || math.IsNaN(b):
			d = math.Inf(1)
		case a == b: // equal infinities, or +0/-0
		default:
			d = math.Abs(a - b)
		}
		o.MaxAbs = math.Max(o.MaxAbs, d)
	}
	if maxRef > 0 {
		o.MaxRel = o.MaxAbs / maxRef
	} else if o.MaxAbs > 0 {
		o.MaxRel = math.Inf(1)
	}
	o.Pass = tol > 0 && want.DType.IsFloat() && o.MaxRel <= tol
	return o
}

// worse keeps the worse of two comparisons of the same output.
func worse(a, b OutputReport) OutputReport {
	out := a
	if b.DType != "" {
		out.DType, out.Shape, out.Elements = b.DType, b.Shape, b.Elements
	}
	out.MaxAbs = math.Max(a.MaxAbs, b.MaxAbs)
	out.MaxRel = math.Max(a.MaxRel, b.MaxRel)
	out.Differing = max(a.Differing, b.Differing)
	out.BitExact = a.BitExact && b.BitExact
	out.Pass = a.Pass && b.Pass
	if out.Problem == "" {
		out.Problem = b.Problem
	}
	return out
}

// halfBoundaries lists the float16 tensors sent between stages, sorted.
func halfBoundaries(g *graph.Graph, man *emit.Manifest) []string {
	seen := map[string]bool{}
	var out []string
	for _, tr := range man.Transfers {
		id, ok := g.TensorByName(tr.Tensor)
		if ok && g.Tensors[id].DType == graph.Float16 && !seen[tr.Tensor] {
			seen[tr.Tensor] = true
			out = append(out, tr.Tensor)
		}
	}
	sort.Strings(out)
	return out
}

// roundedReference loads the original model changed only so that ONNX Runtime rounds each
// given float16 tensor to float16 where it crosses a stage boundary, as the chain must: an
// Identity node copies the tensor to a new graph output (ONNX Runtime keeps graph outputs
// in float16), and the nodes of later stages read the copy. ONNX semantics are unchanged.
func roundedReference(m *ingest.Model, man *emit.Manifest, rounded []string, inNames, outNames []string, sopt ort.Options) (*ort.Session, error) {
	g := m.Graph
	mp := proto.Clone(m.Proto()).(*onnxpb.ModelProto)
	pg := mp.Graph
	stageOf := map[string]int{} // node label → its only stage (absent when duplicated)
	for i, st := range man.Stages {
		dup := map[string]bool{}
		for _, n := range st.DuplicatedNodes {
			dup[n] = true
		}
		for _, n := range st.Nodes {
			if !dup[n] {
				stageOf[n] = i
			}
		}
	}
	from := map[string]int{}
	for _, tr := range man.Transfers {
		from[tr.Tensor] = tr.From
	}
	after := map[int][]*onnxpb.NodeProto{} // producer node → Identity nodes to insert after it
	for _, name := range rounded {
		id, _ := g.TensorByName(name)
		copyName := uniqueName(g, name+"_onnxpart_rounded")
		for v := range g.Nodes {
			if s, ok := stageOf[g.Nodes[v].Label()]; !ok || s <= from[name] {
				continue
			}
			n := pg.Node[v]
			for j, in := range n.Input {
				if in == name {
					n.Input[j] = copyName
				}
			}
		}
		p := g.Tensors[id].Producer
		after[p] = append(after[p], &onnxpb.NodeProto{Name: proto.String(copyName), OpType: proto.String(optype.Identity),
			Input: []string{name}, Output: []string{copyName}})
		pg.Output = append(pg.Output, &onnxpb.ValueInfoProto{Name: proto.String(copyName),
			Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float16))}}}})
	}
	nodes := make([]*onnxpb.NodeProto, 0, len(pg.Node)+len(rounded))
	for v, n := range pg.Node {
		nodes = append(nodes, n)
		nodes = append(nodes, after[v]...)
	}
	pg.Node = nodes
	dir, err := os.MkdirTemp("", "onnxpart-reference-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // a loaded session no longer needs its files
	// External data must sit beside the model for ONNX Runtime: link (or copy) it.
	for _, tp := range pg.Initializer {
		ref, err := m.ExternalRef(tp.GetName())
		if err != nil {
			return nil, err
		}
		if ref == nil {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(ref.Rel))
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Link(ref.Path, dst); err != nil {
			if err := copyFile(ref.Path, dst); err != nil {
				return nil, err
			}
		}
	}
	data, err := proto.Marshal(mp)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "reference.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	return ort.NewSession(path, inNames, outNames, sopt)
}

func uniqueName(g *graph.Graph, name string) string {
	for i := 0; ; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s_%d", name, i)
		}
		if _, taken := g.TensorByName(n); !taken {
			return n
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
