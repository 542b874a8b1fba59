package fusion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

func TestBuiltinRuleSets(t *testing.T) {
	want := []string{"generic", "none", "ort-cpu", "ort-cuda", "tensorrt"}
	if got := strings.Join(BuiltinNames(), ","); got != strings.Join(want, ",") {
		t.Fatalf("built-in sets %s, want %s", got, strings.Join(want, ","))
	}
	for _, name := range want {
		rs := mustBuiltin(t, name)
		if rs.Name != name {
			t.Errorf("%s.yaml is called %q", name, rs.Name)
		}
		if rs.Backend == "" {
			t.Errorf("%s: no backend description", name)
		}
		if name == "none" {
			if rs.Absorb || len(rs.Rules) > 0 || len(rs.Views) > 0 {
				t.Errorf("none must not coarsen: absorb %v, %d rules, views %v", rs.Absorb, len(rs.Rules), rs.Views)
			}
			continue
		}
		if len(rs.Sources) == 0 {
			t.Errorf("%s: no sources", name)
		}
		for _, r := range rs.Rules {
			if r.Source == "" {
				t.Errorf("%s: rule %s has no source", name, r.Name)
			}
		}
	}
	if _, err := Builtin("ort-gpu"); err == nil || !strings.Contains(err.Error(), "ort-cuda") {
		t.Errorf("unknown set: %v (want the list of built-in sets)", err)
	}
}

func TestParseRuleSetErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"rules: []", "has no name"},
		{"name: x\nrulez: []", "field rulez not found"},
		{"name: x\nrules:\n - steps: [{op: Conv}, {op: Relu}]", "rule 1 has no name"},
		{"name: x\nrules:\n - name: a\n   steps: [{op: Conv}, {op: Relu}]\n - name: a\n   steps: [{op: Conv}, {op: Relu}]", `two rules are called "a"`},
		{"name: x\nrules:\n - name: a\n   steps: [{op: Conv}, {op: Relu, from: [1]}]", "refers to step 1, which is not an earlier step"},
		{"name: x\nrules:\n - name: a\n   steps: [{op: Conv}, {op: Relu, same_input: 2}]", "refers to step 2"},
		{"name: x\nrules:\n - name: a\n   steps: [{op: \"@act\"}, {op: Relu}]", `unknown class "@act"`},
		{"name: x\nrules:\n - name: a\n   steps: [{op: Conv, optional: true}, {op: Relu}]", "only the last steps of a rule may be optional"},
		{"name: x\nrules:\n - name: a\n   steps: [{op: Conv}]", "matches single nodes only"},
		{"name: x\nrules:\n - name: a\n   steps: []", "has no steps"},
		{"name: x\nrules:\n - name: a\n   steps: [{op: Conv}, {op: Relu, attrs: {alpha: {a: 1}}}]", `attribute "alpha"`},
		{"name: x\nclasses: {a: [\"@b\"], b: [Relu]}\nrules:\n - name: a\n   steps: [{op: \"@a\"}, {op: Relu}]", "classes cannot contain classes"},
	} {
		_, err := ParseRuleSet([]byte(tc.yaml), "bad.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: error %v, want one naming bad.yaml and containing %q", tc.yaml, err, tc.want)
		}
	}
}

func TestParseRuleSetExpansion(t *testing.T) {
	rs := mustRules(t, `
name: x
classes: {act: [Relu, Clip]}
rules:
  - name: conv-bn-act
    steps:
      - op: Conv
      - op: BatchNormalization
        const_other: true
      - op: "@act"
        optional: true
  - name: chain
    steps:
      - {op: [Add, Mul], repeat: true}
  - name: pair-opt
    steps:
      - {op: Conv}
      - {op: Relu, optional: true}
`)
	if !rs.Absorb {
		t.Error("absorb defaults to true")
	}
	var got []string
	for _, r := range rs.Rules {
		var steps []string
		for _, st := range r.Steps {
			steps = append(steps, strings.Join(st.Ops, "|"))
		}
		got = append(got, r.Name+"="+strings.Join(steps, ","))
	}
	want := "conv-bn-act=Conv,BatchNormalization;conv-bn-act=Conv,BatchNormalization,Relu|Clip;chain=Add|Mul;pair-opt=Conv,Relu"
	if strings.Join(got, ";") != want {
		t.Errorf("rules:\n got %s\nwant %s", strings.Join(got, ";"), want)
	}
	r := rs.Rules[1]
	if !r.Steps[1].ConstOther || len(r.Steps[1].From) != 1 || r.Steps[1].From[0] != 0 || len(r.Steps[0].From) != 0 {
		t.Errorf("defaults: step 1 from %v const %v, step 0 from %v", r.Steps[1].From, r.Steps[1].ConstOther, r.Steps[0].From)
	}
}

func TestLoadRuleSet(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(p, []byte("name: mine\nrules:\n - name: cr\n   steps: [{op: Conv}, {op: Relu}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := Resolve("ort-cuda", p)
	if err != nil || rs.Name != "mine" || len(rs.Rules) != 1 {
		t.Fatalf("Resolve with a file: %v %+v", err, rs)
	}
	if rs, err := Resolve("tensorrt", ""); err != nil || rs.Name != "tensorrt" {
		t.Fatalf("Resolve built-in: %v", err)
	}
	if _, err := LoadRuleSet(filepath.Join(dir, "nothere.yaml")); err == nil || !strings.Contains(err.Error(), "nothere.yaml: no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestAttrPred(t *testing.T) {
	rs := mustRules(t, `
name: x
rules:
  - name: t
    steps:
      - {op: Transpose, attrs: {perm: [0, 2, 1]}}
      - {op: LeakyRelu, attrs: {alpha: 0.1, mode: "fast"}}
`)
	st0, st1 := &rs.Rules[0].Steps[0], &rs.Rules[0].Steps[1]
	for _, tc := range []struct {
		st    *Step
		attrs []graph.Attr
		want  bool
	}{
		{st0, []graph.Attr{{Name: "perm", Kind: graph.AttrInts, Ints: []int64{0, 2, 1}}}, true},
		{st0, []graph.Attr{{Name: "perm", Kind: graph.AttrInts, Ints: []int64{1, 0, 2}}}, false},
		{st0, []graph.Attr{{Name: "perm", Kind: graph.AttrInts, Ints: []int64{0, 2}}}, false},
		{st0, nil, false},
		{st1, []graph.Attr{{Name: "alpha", Kind: graph.AttrFloat, Float: 0.1}, {Name: "mode", Kind: graph.AttrString, Str: "fast"}}, true},
		{st1, []graph.Attr{{Name: "alpha", Kind: graph.AttrFloat, Float: 0.2}, {Name: "mode", Kind: graph.AttrString, Str: "fast"}}, false},
		{st1, []graph.Attr{{Name: "alpha", Kind: graph.AttrFloat, Float: 0.1}, {Name: "mode", Kind: graph.AttrString, Str: "slow"}}, false},
		{st1, []graph.Attr{{Name: "alpha", Kind: graph.AttrInt, Int: 0}, {Name: "mode", Kind: graph.AttrString, Str: "fast"}}, false},
	} {
		n := &graph.Node{Attrs: tc.attrs}
		got := true
		for _, p := range tc.st.Attrs {
			got = got && p.holds(n)
		}
		if got != tc.want {
			t.Errorf("%v on %+v: %v, want %v", tc.st.Ops, tc.attrs, got, tc.want)
		}
	}
}
