package fusion

import (
	"slices"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/internal/ops"
)

// TestBuiltinOpsRegistered: every op a built-in rule set names is in the op registry, so
// that a misspelt op (which would silently never match) fails here.
func TestBuiltinOpsRegistered(t *testing.T) {
	known := map[string]bool{}
	for _, e := range ops.All() {
		known[e.Key()] = true
	}
	for _, name := range BuiltinNames() {
		rs := mustBuiltin(t, name)
		check := func(where, op string) {
			if !known[op] {
				t.Errorf("%s: %s names %q, which the op registry does not know", name, where, op)
			}
		}
		for _, v := range rs.Views {
			check("views", v)
		}
		for _, r := range rs.Rules {
			for _, st := range r.Steps {
				for _, o := range st.Ops {
					check("rule "+r.Name, o)
				}
			}
		}
	}
}

// TestRoleClasses: "@epilogue" and the other role names expand to the registry's ops of that
// role unless the file defines a class of that name.
func TestRoleClasses(t *testing.T) {
	rs, err := ParseRuleSet([]byte(`name: t
rules:
  - name: gemm-act
    steps:
      - op: "@anchor"
      - op: "@epilogue"
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := rs.Rules[0].Steps
	for _, want := range []string{"MatMul", "Conv", "com.microsoft:MatMulNBits"} {
		if !slices.Contains(st[0].Ops, want) {
			t.Errorf("@anchor lacks %s: %v", want, st[0].Ops)
		}
	}
	for _, want := range []string{"Relu", "Add", "com.microsoft:FastGelu"} {
		if !slices.Contains(st[1].Ops, want) {
			t.Errorf("@epilogue lacks %s: %v", want, st[1].Ops)
		}
	}
	if slices.Contains(st[1].Ops, "MatMul") || slices.Contains(st[1].Ops, "Reshape") {
		t.Errorf("@epilogue holds a non-elementwise op: %v", st[1].Ops)
	}
	rs, err = ParseRuleSet([]byte(`name: t
classes: {epilogue: [Relu]}
rules:
  - name: r
    steps: [{op: Conv}, {op: "@epilogue"}]
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rs.Rules[0].Steps[1].Ops, ","); got != "Relu" {
		t.Errorf("a file's own class must win over the role: %s", got)
	}
	if _, err := ParseRuleSet([]byte("name: t\nrules: [{name: r, steps: [{op: Conv}, {op: \"@nosuch\"}]}]\n"), "t.yaml"); err == nil {
		t.Error("an unknown class must be an error")
	}
}
