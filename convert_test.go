package onnxpart

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/internal/planner"
)

// TestConversionsCoverEveryField fills every exported field of one side of each conversion
// in convert.go with a value of its own, converts, and compares field by field, by name:
// it fails when a field is added to the public type or the planner's and not the other,
// or when a conversion does not carry a field across.
func TestConversionsCoverEveryField(t *testing.T) {
	t.Run("Options", func(t *testing.T) {
		var o Options
		fill(reflect.ValueOf(&o).Elem(), new(int))
		var heard Progress
		o.Progress = func(p Progress) { heard = p }
		p := plannerOptions(o)
		for _, d := range differences("Options", reflect.ValueOf(o), reflect.ValueOf(p)) {
			t.Error(d)
		}
		sent := planner.Progress{Phase: "solve", Objective: 2, LowerBound: 1, Gap: 0.5, Elapsed: 3}
		p.Progress(sent)
		if heard != Progress(sent) {
			t.Errorf("Options.Progress heard %+v, want %+v", heard, sent)
		}
	})
	t.Run("Result from the planner", func(t *testing.T) {
		var p planner.Result
		fill(reflect.ValueOf(&p).Elem(), new(int))
		r := resultOf(&p)
		for _, d := range differences("Result", reflect.ValueOf(*r), reflect.ValueOf(p)) {
			t.Error(d)
		}
		if r.plan != &p || r.planned() != &p {
			t.Error("the public Result does not keep the planner's")
		}
	})
	t.Run("Result to the planner", func(t *testing.T) {
		var r Result
		fill(reflect.ValueOf(&r).Elem(), new(int))
		p := r.planned()
		for _, d := range differences("Result", reflect.ValueOf(r), reflect.ValueOf(*p)) {
			t.Error(d)
		}
	})
	t.Run("Result edited between Plan and Prepare", func(t *testing.T) {
		var p planner.Result
		fill(reflect.ValueOf(&p).Elem(), new(int))
		r := resultOf(&p)
		r.Notes = append(r.Notes, r.Notes[0])
		r.Stages[0].TotalS++
		r.Batch.Routes = append(r.Batch.Routes, RoutePlan{Inputs: 9})
		r.Batch = &BatchPlan{Inputs: r.Batch.Inputs + 1, Routes: r.Batch.Routes}
		r.Seconds = 99
		for _, d := range differences("Result", reflect.ValueOf(*r), reflect.ValueOf(*r.planned())) {
			t.Error(d)
		}
	})
}

// fill sets every exported field, element and pointer target it can reach in the root
// package's and the planner's types to a value of its own (n counts them); values of other
// packages' pointer types are fresh zero values, compared by identity.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), n)
		fill(s.Index(1), n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if ours(v.Type().Elem()) {
			fill(p.Elem(), n)
		}
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { return nil }))
	}
}

// ours reports whether t is a type of the root package or of internal/planner.
func ours(t reflect.Type) bool {
	p := t.PkgPath()
	return p == "github.com/onnxpart/onnxpart" || strings.HasSuffix(p, "/internal/planner")
}

// differences compares a public value with the planner's (or the same type twice): structs
// field by field by name, both ways; words by their value; other packages' types as they
// are (pointers by identity).
func differences(path string, a, b reflect.Value) []string {
	if a.Type() == b.Type() && !ours(a.Type()) && a.Kind() != reflect.Slice && a.Kind() != reflect.Pointer {
		if a.Kind() == reflect.Func || reflect.DeepEqual(a.Interface(), b.Interface()) {
			return nil
		}
		return []string{fmt.Sprintf("%s: %v, the other side has %v", path, a, b)}
	}
	if a.Kind() != b.Kind() {
		return []string{fmt.Sprintf("%s: a %s and a %s", path, a.Type(), b.Type())}
	}
	switch a.Kind() {
	case reflect.Struct:
		var out []string
		for i := 0; i < a.NumField(); i++ {
			f := a.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if _, ok := b.Type().FieldByName(f.Name); !ok {
				out = append(out, fmt.Sprintf("%s.%s: %s has no such field", path, f.Name, b.Type()))
				continue
			}
			out = append(out, differences(path+"."+f.Name, a.Field(i), b.FieldByName(f.Name))...)
		}
		for i := 0; i < b.NumField(); i++ {
			if f := b.Type().Field(i); f.IsExported() {
				if _, ok := a.Type().FieldByName(f.Name); !ok {
					out = append(out, fmt.Sprintf("%s.%s: %s has no such field", path, f.Name, a.Type()))
				}
			}
		}
		return out
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return []string{fmt.Sprintf("%s: %d elements (nil %v), the other side %d (nil %v)", path, a.Len(), a.IsNil(), b.Len(), b.IsNil())}
		}
		var out []string
		for i := 0; i < a.Len(); i++ {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))...)
		}
		return out
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return []string{fmt.Sprintf("%s: nil on one side only", path)}
			}
			return nil
		}
		if a.Type() == b.Type() && !ours(a.Type().Elem()) {
			if a.Pointer() != b.Pointer() {
				return []string{fmt.Sprintf("%s: another %s", path, a.Type())}
			}
			return nil
		}
		return differences(path, a.Elem(), b.Elem())
	case reflect.Func:
		if a.IsNil() != b.IsNil() {
			return []string{fmt.Sprintf("%s: nil on one side only", path)}
		}
		return nil
	case reflect.Map:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return []string{fmt.Sprintf("%s: %v, the other side has %v", path, a, b)}
		}
		return nil
	}
	if !a.CanConvert(b.Type()) || a.Convert(b.Type()).Interface() != b.Interface() {
		return []string{fmt.Sprintf("%s: %v, the other side has %v", path, a, b)}
	}
	return nil
}

// TestWordConstantsMatchPlanner fails when the root package's word constants (Objective,
// Cut, Solver, Bounds) and the planner's differ in name or value: the conversions pass the
// words through as they are.
func TestWordConstantsMatchPlanner(t *testing.T) {
	words := func(file string) map[string]string {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					typ, ok := vs.Type.(*ast.Ident)
					if !ok {
						continue
					}
					switch typ.Name {
					case "Objective", "Cut", "Solver", "Bounds":
						for i, name := range vs.Names {
							out[typ.Name+" "+name.Name] = vs.Values[i].(*ast.BasicLit).Value
						}
					}
				}
			}
		}
		return out
	}
	pub, internal := words("types.go"), words("internal/planner/words.go")
	if len(pub) < 20 {
		t.Fatalf("found only %d word constants in types.go", len(pub))
	}
	if !reflect.DeepEqual(pub, internal) {
		t.Errorf("word constants differ:\nroot    %v\nplanner %v", pub, internal)
	}
}

// TestConstantsMatchPlanner fails when a constant the root package states (for go doc to
// show its value) differs from the planner's.
func TestConstantsMatchPlanner(t *testing.T) {
	for _, c := range []struct {
		name     string
		pub, own float64
	}{
		{"AutoBlockSlack", AutoBlockSlack, planner.AutoBlockSlack},
		{"MaxPlacementDevices", MaxPlacementDevices, planner.MaxPlacementDevices},
		{"MaxGranules", MaxGranules, planner.MaxGranules},
		{"DefaultStagesPerDevice", DefaultStagesPerDevice, planner.DefaultStagesPerDevice},
		{"NoStageCap", NoStageCap, planner.NoStageCap},
		{"MinCapNote", MinCapNote, planner.MinCapNote},
	} {
		if c.pub != c.own {
			t.Errorf("%s is %g here and %g in the planner", c.name, c.pub, c.own)
		}
	}
}
