package main

import (
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/verify"
)

// TestVerdictLine: verify says "bit-exact" only when every output of every size run equals
// the unmodified model bit for bit; a skipped size is named and fails unless
// --allow-skipped; a float16 reference that rounds boundaries is said to be one, with the
// difference from the unmodified model.
func TestVerdictLine(t *testing.T) {
	exact := []verify.OutputReport{{Name: "y", BitExact: true, Pass: true}}
	skip := &verify.Report{Skipped: "not run at batch=2: original model: broken", Pass: false}
	ran := &verify.Report{Pass: true, Outputs: exact}
	for _, tc := range []struct {
		name string
		rep  *verify.Report
		want []string
		not  []string
	}{
		{"exact", &verify.Report{Pass: true, Outputs: exact, OtherSizes: []*verify.Report{ran}},
			[]string{"PASS: every output is bit-exact at 2 sizes"}, nil},
		{"skipped fails", &verify.Report{Pass: false, Outputs: exact, OtherSizes: []*verify.Report{ran, skip}, SkippedSizes: 1},
			[]string{"FAIL: 1 size of 3 not run", "--allow-skipped"}, []string{"PASS"}},
		{"skipped allowed", &verify.Report{Pass: true, AllowSkipped: true, Outputs: exact, OtherSizes: []*verify.Report{ran, {Skipped: "x", Pass: true}}, SkippedSizes: 1},
			[]string{"PASS: every output is bit-exact at 2 sizes; 1 size not run"}, nil},
		{"float16 reference", &verify.Report{Pass: true, Outputs: exact, Rounded: []string{"h"},
			Plain: []verify.OutputReport{{Name: "y", MaxRel: 0.000977}}},
			[]string{"equals the reference bit for bit", "float16", "0.000977"}, []string{"bit-exact"}},
		{"tolerance", &verify.Report{Pass: true, Optimize: true, Outputs: []verify.OutputReport{{Name: "y", MaxRel: 3e-6, Pass: true}}},
			[]string{"within tolerance", "3e-06"}, []string{"bit-exact"}},
		{"mismatch", &verify.Report{Pass: false, Outputs: []verify.OutputReport{{Name: "y"}}},
			[]string{"FAIL: the stages do not reproduce the model"}, nil},
	} {
		got := verdictLine(tc.rep)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q says %q", tc.name, got, w)
			}
		}
	}
}
