package main

import (
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
)

// The flags that bind a model's input sizes (ingest.Options.Dims and InputShapes), which
// every command that loads a model takes.

// parseDims parses --dim values: NAME=SIZE, or comma-separated lists of them (a=1,b=2).
// Repeating a name with another size is an error.
func parseDims(list []string) (map[string]int64, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]int64{}
	for _, arg := range list {
		for _, s := range strings.Split(arg, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(s), "=")
			v, err := strconv.ParseInt(val, 10, 64)
			if !ok || name == "" || err != nil {
				return nil, diag.Usage("--dim %q: want NAME=SIZE or a list NAME=SIZE,NAME=SIZE, e.g. --dim batch=4,seq=128", arg).About(diag.Flag, "--dim")
			}
			if v < 0 {
				return nil, diag.Usage("--dim %s=%d: a dimension cannot be negative", name, v).About(diag.Flag, "--dim")
			}
			if old, dup := out[name]; dup && old != v {
				return nil, diag.Usage("--dim %s is given twice, as %d and %d", name, old, v).About(diag.Flag, "--dim")
			}
			out[name] = v
		}
	}
	return out, nil
}

// parseInputShapes parses --input-shape values: NAME=D0xD1x…, e.g. input=1x3x224x224
// (NAME=[1,3,224,224] is accepted too; NAME= alone is a scalar). The name is everything
// before the last '='.
func parseInputShapes(list []string) (map[string][]int64, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string][]int64{}
	for _, s := range list {
		i := strings.LastIndex(s, "=")
		bad := func() error {
			return diag.Usage("--input-shape %q: want NAME=SHAPE with the sizes joined by x, e.g. --input-shape input=1x3x224x224", s).About(diag.Flag, "--input-shape")
		}
		if i <= 0 {
			return nil, bad()
		}
		name, spec := s[:i], strings.TrimSpace(s[i+1:])
		spec = strings.TrimSuffix(strings.TrimPrefix(spec, "["), "]")
		dims := []int64{}
		if spec != "" {
			for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == 'x' || r == 'X' || r == ',' }) {
				v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
				if err != nil {
					return nil, bad()
				}
				if v < 0 {
					return nil, diag.Usage("--input-shape %s: a dimension cannot be negative", s).About(diag.Flag, "--input-shape")
				}
				dims = append(dims, v)
			}
		}
		if _, dup := out[name]; dup {
			return nil, diag.Usage("--input-shape %s is given twice", name).About(diag.Flag, "--input-shape")
		}
		out[name] = dims
	}
	return out, nil
}

// ingestFlags are the flags that set ingest.Options, by field, for its errors to name; and
// AllowUnknownShapes, the way past ingest's RequireKnownShapes.
var ingestFlags = diag.Names{"Dims": "--dim", "InputShapes": "--input-shape", "AllowUnknownShapes": "--allow-unknown-shapes"}

// profileFlags are the flags behind devices.Resolve's spec and options, for its errors to
// name.
var profileFlags = diag.Names{"Devices": "--devices", "Link": "--link"}

// emitFlags are the flags behind emit.Options (and deploy/triton's options, which name
// emit's FreezeDims too), for their errors and manifest notes to name.
var emitFlags = diag.Names{"Force": "--force", "FreezeDims": "--freeze-dims", "Batch": "--batch", "MaxBatch": "--max-batch"}

// genaiFlags are the flags behind deploy/genai.Options, for its errors and notes to name.
var genaiFlags = diag.Names{"Set": "--genai", "HFConfig": "--genai hf_config"}
