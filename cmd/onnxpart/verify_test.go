package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/verify"
)

// TestPrintVerifyDerived: a dim the model derives from the others is named once, with its
// expression and size, before the sizes.
func TestPrintVerifyDerived(t *testing.T) {
	rep := &verify.Report{Model: "decoder.onnx", Stages: 2, Runs: 1, Seed: 1, Reference: "original model", Pass: true,
		Dims:        map[string]int64{"batch": 1, "past": 0, "seq": 4, "total": 4},
		DerivedDims: map[string]string{"total": "past + seq"},
		Outputs:     []verify.OutputReport{{Name: "past_scaled.1", DType: "float32", Shape: []int64{1, 2, 0, 4}, BitExact: true, Pass: true}}}
	var b bytes.Buffer
	printVerify(&b, "out", rep)
	out := b.String()
	if strings.Count(out, "derived:") != 1 || !strings.Contains(out, "derived: total = past + seq = 4 (the model ties it to the other sizes)") {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(out, "[1 2 0 4]") || !strings.Contains(out, "0/0") || !strings.Contains(out, "PASS") {
		t.Errorf("an empty output's row:\n%s", out)
	}
}
