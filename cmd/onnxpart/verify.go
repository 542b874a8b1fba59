package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/verify"
)

func init() {
	register(&command{
		name:    "verify",
		summary: "run the original model and the chain of stages in ONNX Runtime and compare every output",
		usage: `Usage: onnxpart verify DIR [--model MODEL.onnx] [--opt disabled|all] [--runs N] [--seed S]
                       [--input NAME=FILE.npy]... [--dim NAME=SIZE]... [--input-shape NAME=SHAPE]...
                       [--rtol X] [--allow-skipped] [--json]

Checks DIR (written by 'onnxpart split' or the planner) structurally, then runs the original
model and the stages in order in ONNX Runtime (CPU), feeding each stage by tensor name, and
compares every model output. Prints the largest absolute and relative error per output.

  --opt disabled  graph optimizations off: every output must be bit-identical (default)
  --opt all       all optimizations: relative error ≤ --rtol, where relative error =
                  max |chain − original| / max |original|; by default 1e-4 for float32 and
                  float64 outputs, 1e-2 for float16 and 8e-2 for bfloat16 (about ten of
                  their epsilons: optimizations move where they round); integer and bool
                  outputs must be bit-identical. --rtol sets one for every float output.

Inputs are random and seeded (floats in [-1,1); integer ids that index a table in range;
attention masks all ones), or real data from .npy files with --input. Symbolic dimensions the stages kept
take their size from the input files, --dim, the size the plan bound them to, or 1; a
dimension the model ties to others (a decoder's attention mask length total = past + seq)
follows from them unless the input files or --dim size it, so --dim past=0 alone runs a
prefill. An input with unnamed dimensions (input[?,?]) takes its shape from its --input
file or --input-shape NAME=1x3x224x224. A plan made at bound sizes (onnxpart MODEL --dim batch=8) is also run at a second
size of each dimension it bound and nothing else sized (derived ones move with the others):
1 for a batch, else one less; a size at which the original model itself fails is skipped,
reported with its reason, and fails the check (exit 4) unless --allow-skipped is given.

For float16 models, ONNX Runtime's CPU provider computes in float32 between operators that
lack float16 kernels, skipping the rounding a stage boundary must do; the reference then
rounds those boundary tensors to float16 too, and the plain difference is printed as well.

A batched plan (--batch) is verified route by route: DIR and every route directory its
manifest lists (DIR/route1, …).

Exit status: 0 if every output agrees, 4 if one differs, 1 if something cannot be run.

Examples:
  onnxpart verify out
  onnxpart verify out --opt all --runs 5 --seed 7
  onnxpart verify out --input input_ids=ids.npy --input attention_mask=mask.npy
  onnxpart verify out --dim past=0                  # a decoder's prefill (empty KV cache)
`,
		run: runVerify,
	})
}

// verifyFlags are the flags that set verify.Options, by field, for its errors to name.
var verifyFlags = diag.Names{"ModelPath": "--model", "Inputs": "--input", "Dims": "--dim", "InputShapes": "--input-shape"}

func runVerify(ctx context.Context, e *env, args []string) error {
	c := commands["verify"]
	fs := newFlags(e, c)
	model := fs.String("model", "", "original model (default: the path the manifest records, relative to DIR)")
	optLevel := fs.String("opt", "disabled", "ONNX Runtime graph optimizations: disabled or all")
	runs := fs.Int("runs", 3, "number of input sets")
	seed := fs.Int64("seed", 1, "seed of the random inputs")
	inputs := fs.StringArray("input", nil, "real data for a model input, NAME=FILE.npy (repeatable)")
	dimFlags := fs.StringArray("dim", nil, "size of a symbolic dimension the stages kept, NAME=SIZE (repeatable)")
	shapeFlags := fs.StringArray("input-shape", nil, inputShapeHelp)
	rtol := fs.Float64("rtol", 0, "largest relative error accepted with --opt all (default by output type: 1e-4 float32/float64, 1e-2 float16, 8e-2 bfloat16)")
	threads := fs.Int("threads", 1, "ONNX Runtime intra-op threads")
	allowSkipped := fs.Bool("allow-skipped", false, "pass even when a second size could not be run (it is still reported)")
	plain := fs.Bool("plain-reference", false, "compare float16 models with the unmodified original (no boundary rounding)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	maxTensor := fs.Int64("max-tensor-bytes", verify.DefaultMaxTensorBytes, "refuse to run when an input, boundary or output tensor would exceed this size")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return diag.Usage("verify takes one directory, got %d arguments", fs.NArg())
	}
	if *maxTensor <= 0 {
		return diag.Usage("--max-tensor-bytes must be positive").About(diag.Flag, "--max-tensor-bytes")
	}
	opt := verify.Options{ModelPath: *model, Runs: *runs, Seed: *seed, Tolerance: *rtol, Threads: *threads,
		PlainReference: *plain, MaxTensorBytes: *maxTensor, AllowSkipped: *allowSkipped, Names: verifyFlags}
	switch *optLevel {
	case "disabled":
	case "all":
		opt.Optimize = true
	default:
		return diag.Usage("--opt %q: want disabled or all", *optLevel).About(diag.Flag, "--opt")
	}
	if *runs < 1 {
		return diag.Usage("--runs %d: need at least 1", *runs).About(diag.Flag, "--runs")
	}
	if fs.Changed("rtol") && *rtol <= 0 {
		return diag.Usage("--rtol %g: must be positive", *rtol).About(diag.Flag, "--rtol")
	}
	shapes, err := parseInputShapes(*shapeFlags)
	if err != nil {
		return diag.Wrap(diag.KindUsage, err)
	}
	opt.InputShapes = shapes
	for _, s := range *inputs {
		name, file, ok := strings.Cut(s, "=")
		if !ok || name == "" || file == "" {
			return diag.Usage("--input %q: want NAME=FILE.npy", s).About(diag.Flag, "--input")
		}
		if opt.Inputs == nil {
			opt.Inputs = map[string]string{}
		}
		if _, dup := opt.Inputs[name]; dup {
			return diag.Usage("--input %s is given twice", name).About(diag.Flag, "--input")
		}
		opt.Inputs[name] = file
	}
	dims, err := parseDims(*dimFlags)
	if err != nil {
		return err
	}
	opt.Dims = dims
	dir := fs.Arg(0)
	rep, err := verify.Run(ctx, dir, opt)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printVerify(e.stdout, dir, rep)
		for _, sub := range rep.Routes {
			fmt.Fprintln(e.stdout)
			printVerify(e.stdout, filepath.Join(dir, sub.Dir), sub)
		}
	}
	if !rep.Pass {
		return verify.MismatchOf(rep)
	}
	return nil
}

func printVerify(w io.Writer, dir string, rep *verify.Report) {
	mode := "optimizations disabled (bit-exact)"
	if rep.Optimize {
		mode = "all optimizations (relative error ≤ each output's rtol)"
		if tol, one := oneTolerance(rep); one {
			mode = fmt.Sprintf("all optimizations (relative error ≤ %g)", tol)
		}
	}
	fmt.Fprintf(w, "verify %s: %s of %s, %s, %s, seed %d\n", dir, plural(rep.Stages, "stage"), rep.Model, mode, plural(rep.Runs, "run"), rep.Seed)
	fmt.Fprintf(w, "reference: %s\n", rep.Reference)
	if len(rep.DerivedDims) > 0 {
		// Once: the sizes below show what each derived dim is at every size.
		names := make([]string, 0, len(rep.DerivedDims))
		for d := range rep.DerivedDims {
			names = append(names, d)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, d := range names {
			parts[i] = fmt.Sprintf("%s = %s = %d", d, rep.DerivedDims[d], rep.Dims[d])
		}
		fmt.Fprintf(w, "derived: %s (the model ties it to the other sizes)\n", strings.Join(parts, ", "))
	}
	if len(rep.OtherSizes) > 0 {
		fmt.Fprintf(w, "at %s (the sizes planned at):\n", dimWords(rep.Dims))
	}
	printSize(w, rep)
	for _, o := range rep.OtherSizes {
		switch {
		case o.Skipped != "":
			fmt.Fprintf(w, "skipped: %s\n", o.Skipped)
		case o.Problem != "":
			fmt.Fprintf(w, "FAIL: %s\n", o.Problem)
		default:
			fmt.Fprintf(w, "at %s:\n", dimWords(o.Dims))
			printSize(w, o)
		}
	}
	fmt.Fprintln(w, verdictLine(rep))
}

// verdictLine is verify's last line. "bit-exact" only when every output of every size run
// equals the unmodified model bit for bit; otherwise the tolerance and why. A skipped size
// is named: it fails the check unless --allow-skipped, and qualifies a pass with it.
func verdictLine(rep *verify.Report) string {
	run := 1
	for _, o := range rep.OtherSizes {
		if o.Skipped == "" {
			run++
		}
	}
	sizes := ""
	if len(rep.OtherSizes) > 0 {
		sizes = fmt.Sprintf(" at %s", plural(run, "size"))
	}
	if !rep.Pass {
		onlySkips := rep.SkippedSizes > 0 && len(rep.Routes) == 0
		for _, out := range rep.Outputs {
			onlySkips = onlySkips && out.Pass
		}
		for _, o := range rep.OtherSizes {
			if o.Skipped == "" && !o.Pass {
				onlySkips = false
			}
		}
		if onlySkips {
			return fmt.Sprintf("FAIL: %s of %d not run (see skipped above), so the stage files are unchecked there; every size run agrees (--allow-skipped accepts this)",
				plural(rep.SkippedSizes, "size"), len(rep.OtherSizes)+1)
		}
		return "FAIL: the stages do not reproduce the model"
	}
	skipped := ""
	if rep.SkippedSizes > 0 {
		skipped = fmt.Sprintf("; %s not run (skipped above, accepted by --allow-skipped)", plural(rep.SkippedSizes, "size"))
	}
	exact := true
	var worst float64
	for _, o := range append([]*verify.Report{rep}, rep.OtherSizes...) {
		for _, out := range o.Outputs {
			exact = exact && out.BitExact
			worst = max(worst, out.MaxRel)
		}
	}
	switch {
	case exact && len(rep.Rounded) == 0:
		return "PASS: every output is bit-exact" + sizes + skipped
	case exact:
		// the reference rounds float16 boundary tensors: equal to it, not to the unmodified model
		var plain float64
		for _, o := range append([]*verify.Report{rep}, rep.OtherSizes...) {
			for _, out := range o.Plain {
				plain = max(plain, out.MaxRel)
			}
		}
		return fmt.Sprintf("PASS: every output equals the reference bit for bit%s (the original with its float16 stage-boundary tensors rounded, which ONNX Runtime's CPU provider skips inside one model); against the unmodified model the largest relative difference is %.3g%s",
			sizes, plain, skipped)
	case !rep.Optimize:
		return fmt.Sprintf("PASS%s%s", sizes, skipped)
	default:
		return fmt.Sprintf("PASS: every output is within tolerance%s (largest relative error %.3g; with optimizations on, ONNX Runtime fuses and reorders differently across stage boundaries)%s",
			sizes, worst, skipped)
	}
}

// printSize prints the inputs and the output table of one size.
func printSize(w io.Writer, rep *verify.Report) {
	for _, in := range rep.Inputs {
		fmt.Fprintf(w, "input  %s %s %v: %s\n", in.Name, in.DType, in.Shape, in.Source)
	}
	tw := newTable(w, 0)
	if rep.Optimize {
		// Each output's tolerance: it follows the output's type unless --rtol sets one.
		fmt.Fprintln(tw, "output\tdtype\tshape\tmax abs\tmax rel\trtol\tdiffering\tresult")
		for _, o := range rep.Outputs {
			tol := "exact"
			if o.Tolerance > 0 {
				tol = fmt.Sprintf("%g", o.Tolerance)
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%.3g\t%.3g\t%s\t%d/%d\t%s\n", o.Name, o.DType, o.Shape, o.MaxAbs, o.MaxRel, tol, o.Differing, o.Elements, verdict(o))
		}
	} else {
		fmt.Fprintln(tw, "output\tdtype\tshape\tmax abs\tmax rel\tdiffering\tresult")
		for _, o := range rep.Outputs {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%.3g\t%.3g\t%d/%d\t%s\n", o.Name, o.DType, o.Shape, o.MaxAbs, o.MaxRel, o.Differing, o.Elements, verdict(o))
		}
	}
	tw.Flush()
	for _, o := range rep.Plain {
		fmt.Fprintf(w, "against the unmodified model: %s max abs %.3g, max rel %.3g (float16 rounding that ONNX Runtime skips)\n", o.Name, o.MaxAbs, o.MaxRel)
	}
}

// oneTolerance returns the tolerance every output is held to, if they share one (outputs
// that must be bit-exact aside).
func oneTolerance(rep *verify.Report) (float64, bool) {
	tol := 0.0
	for _, o := range rep.Outputs {
		switch {
		case o.Tolerance == 0:
		case tol == 0:
			tol = o.Tolerance
		case o.Tolerance != tol:
			return 0, false
		}
	}
	return tol, tol > 0
}

// dimWords writes sizes as "batch=8, seq=128", sorted.
func dimWords(d map[string]int64) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, d[k])
	}
	return strings.Join(parts, ", ")
}

func verdict(o verify.OutputReport) string {
	switch {
	case o.Problem != "":
		return "FAIL: " + o.Problem
	case o.BitExact:
		return "bit-exact"
	case o.Pass:
		return "within tolerance"
	}
	return "FAIL"
}
