package verify

import (
	"fmt"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

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
