package pipebench

import (
	"testing"

	"github.com/onnxpart/onnxpart/emit"
)

// TestPhaseOf: a run is compared with the workload phase whose every dim it binds to the same
// size, and with none when it binds another size (a workload plan's per-request figures are
// never a per-call prediction).
func TestPhaseOf(t *testing.T) {
	phases := []emit.PhasePrediction{
		{Name: "prefill", Dims: map[string]int64{"seq": 32, "past": 0}},
		{Name: "decode", Dims: map[string]int64{"seq": 1, "past": 256}},
	}
	for _, c := range []struct {
		dims map[string]int64
		want string
	}{
		{map[string]int64{"batch": 1, "seq": 1, "past": 256, "total": 257}, "decode"},
		{map[string]int64{"seq": 32, "past": 0}, "prefill"},
		{map[string]int64{"seq": 1, "past": 100}, ""},
		{map[string]int64{"seq": 1}, ""},
	} {
		got := ""
		if p := phaseOf(phases, c.dims); p != nil {
			got = p.Name
		}
		if got != c.want {
			t.Errorf("dims %v: phase %q, want %q", c.dims, got, c.want)
		}
	}
}
