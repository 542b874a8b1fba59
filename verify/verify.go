package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/outdir"
	"github.com/onnxpart/onnxpart/verify/npy"
)

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
// input file, input shape or dim, an input nothing sizes; named as Options.Names says), kind input for everything
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
