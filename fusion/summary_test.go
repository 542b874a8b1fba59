package fusion

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	x := newGB(t)
	in := x.input("in")
	a := x.op("Relu", convBN(x, in))
	b := x.op("Relu", x.op("Conv", a, x.weight("w2")))
	out := x.op("Add", b, x.constant())
	g := x.build(out)
	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cpu"))
	s := Summarize(c, 2)
	if s.NodesBefore != 7 || s.NodesAfter != 3 || s.Absorbed != 1 || s.Duplicates != 0 || s.RuleSet != "ort-cpu" {
		t.Fatalf("summary %+v", s)
	}
	want := []RuleCount{{"conv-act", 1, 2, 0}, {"conv-bn-act", 1, 3, 0}, {"", 1, 1, 1}}
	got := append([]RuleCount(nil), s.Rules...)
	if len(got) != 3 {
		t.Fatalf("rules %+v", got)
	}
	// Ties (one group each) are broken by name.
	if got[0] != want[2] || got[1] != want[0] || got[2] != want[1] {
		t.Errorf("rules %+v, want %+v", got, []RuleCount{want[2], want[0], want[1]})
	}
	if len(s.Largest) != 2 || s.Largest[0].Rule != "conv-bn-act" || s.Largest[0].Nodes != 3 ||
		strings.Join(s.Largest[0].Ops, " ") != "Conv BatchNormalization Relu" || s.Largest[1].Nodes != 2 {
		t.Errorf("largest %+v", s.Largest)
	}
	var buf bytes.Buffer
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ort-cpu: 7 nodes -> 3 groups (57.1% fewer), 1 absorbed constants", "conv-bn-act", "(single node)", "Conv BatchNormalization Relu"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, buf.String())
		}
	}
	js, _ := json.Marshal(s)
	for _, w := range []string{`"rule_set":"ort-cpu"`, `"nodes_before":7`, `"nodes_after":3`, `"largest":[`, `"ops":["Conv","BatchNormalization","Relu"]`} {
		if !strings.Contains(string(js), w) {
			t.Errorf("JSON lacks %s: %s", w, js)
		}
	}
}
