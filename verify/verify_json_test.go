package verify

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestOutputReportJSONInfinite(t *testing.T) {
	rep := OutputReport{Name: "y", DType: "float32", Shape: []int64{2}, MaxAbs: math.Inf(1), MaxRel: math.NaN(), Elements: 2, Differing: 2}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("a mismatch report must still be JSON: %v", err)
	}
	s := string(b)
	for _, want := range []string{`"max_abs":null`, `"max_rel":null`, `"name":"y"`, `"differing":2`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
	ok, _ := json.Marshal(OutputReport{Name: "z", MaxAbs: 0.5, MaxRel: 0.25})
	if !strings.Contains(string(ok), `"max_abs":0.5`) || strings.Count(string(ok), `"max_abs"`) != 1 {
		t.Errorf("finite errors: %s", ok)
	}
}
