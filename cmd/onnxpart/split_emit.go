package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"onnxpart/emit"
)

// splitEmit is what `split --emit` asked for beyond the stage files and the manifest, which
// split always writes.
type splitEmit struct {
	report, triton bool
}

// parseSplitEmit reads split's --emit list: onnx and manifest (always written), report
// (DIR/report.html) and triton (a Triton model repository in DIR/triton).
func parseSplitEmit(list []string) (splitEmit, error) {
	var se splitEmit
	for _, x := range list {
		switch x = strings.TrimSpace(x); x {
		case "onnx", "manifest", "":
		case "report":
			se.report = true
		case "triton":
			se.triton = true
		default:
			return se, usageErrorf("--emit %q: want a list of onnx, manifest, report, triton", x)
		}
	}
	return se, nil
}

// extras returns the emit.Options.Extras hook that writes the report and the Triton
// repository into the output directory before its atomic rename (nil for neither), so
// that a failure leaves nothing behind.
func (se splitEmit) extras() func(string, *emit.Manifest) error {
	if !se.report && !se.triton {
		return nil
	}
	return func(dir string, man *emit.Manifest) error {
		if se.report {
			if err := emit.WriteReport(man, dir, emit.ReportOptions{Producer: "onnxpart " + version}); err != nil {
				return err
			}
		}
		if se.triton {
			if err := emit.WriteTriton(man, dir, filepath.Join(dir, emit.TritonDir), emit.TritonOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
}

// print names the extra outputs after the summary.
func (se splitEmit) print(w io.Writer, dir string) {
	if se.report {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(dir, emit.ReportFile))
	}
	if se.triton {
		repo := filepath.Join(dir, emit.TritonDir)
		fmt.Fprintf(w, "triton: %s (tritonserver --model-repository %s)\n", repo, repo)
	}
}
