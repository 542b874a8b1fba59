package onnxpart_test

import (
	"fmt"
	"go/types"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestPublicAPINoInternalTypes fails when an exported identifier of a public package mentions
// a type of an internal package in its signature, fields or methods: code outside the module
// could see such a value but never name its type, build one, or read it. An exported alias of
// an internal type counts too (it once was `type Options = planner.Options`, and go doc showed
// the internal name): a public package declares its own types and converts to the internal
// ones.
func TestPublicAPINoInternalTypes(t *testing.T) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedImports | packages.NeedDeps}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Skipf("loading the packages: %v", err)
	}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors[0])
		}
	}
	var problems []string
	for _, p := range pkgs {
		if !public(p.PkgPath) {
			continue
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			where := p.PkgPath + "." + name
			if tn, ok := obj.(*types.TypeName); ok {
				if tn.IsAlias() {
					if n, ok := types.Unalias(tn.Type()).(*types.Named); ok && internal(n) {
						problems = append(problems, fmt.Sprintf("%s is an alias of %s.%s", where, n.Obj().Pkg().Path(), n.Obj().Name()))
						continue
					}
				}
				if named, ok := types.Unalias(tn.Type()).(*types.Named); ok {
					for i := 0; i < named.NumMethods(); i++ {
						if m := named.Method(i); m.Exported() {
							problems = append(problems, leaks(where+"."+m.Name(), m.Type(), map[types.Type]bool{})...)
						}
					}
				}
				problems = append(problems, leaks(where, tn.Type().Underlying(), map[types.Type]bool{})...)
				continue
			}
			problems = append(problems, leaks(where, obj.Type(), map[types.Type]bool{})...)
		}
	}
	sort.Strings(problems)
	for _, pr := range problems {
		t.Error(pr)
	}
}

// public reports whether a package is part of the public API: not internal, not a command,
// a benchmark program or a test helper.
func public(path string) bool {
	for _, part := range strings.Split(path, "/") {
		switch part {
		case "internal", "cmd", "bench", "examples", "benchtest", "realmodels":
			return false
		}
	}
	return true
}

// leaks lists the internal types t mentions (not looking into named types' own fields: those
// are checked where the named type is declared, or are internal themselves).
func leaks(where string, t types.Type, seen map[types.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if internal(t) {
			return []string{fmt.Sprintf("%s mentions %s.%s", where, t.Obj().Pkg().Path(), t.Obj().Name())}
		}
		var out []string
		if args := t.TypeArgs(); args != nil {
			for i := 0; i < args.Len(); i++ {
				out = append(out, leaks(where, args.At(i), seen)...)
			}
		}
		return out
	case *types.Alias:
		return leaks(where, types.Unalias(t), seen)
	case *types.Pointer:
		return leaks(where, t.Elem(), seen)
	case *types.Slice:
		return leaks(where, t.Elem(), seen)
	case *types.Array:
		return leaks(where, t.Elem(), seen)
	case *types.Chan:
		return leaks(where, t.Elem(), seen)
	case *types.Map:
		return append(leaks(where, t.Key(), seen), leaks(where, t.Elem(), seen)...)
	case *types.Signature:
		var out []string
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := 0; i < tup.Len(); i++ {
				out = append(out, leaks(where, tup.At(i).Type(), seen)...)
			}
		}
		return out
	case *types.Struct:
		var out []string
		for i := 0; i < t.NumFields(); i++ {
			if f := t.Field(i); f.Exported() {
				out = append(out, leaks(where+"."+f.Name(), f.Type(), seen)...)
			}
		}
		return out
	case *types.Interface:
		var out []string
		for i := 0; i < t.NumExplicitMethods(); i++ {
			if m := t.ExplicitMethod(i); m.Exported() {
				out = append(out, leaks(where+"."+m.Name(), m.Type(), seen)...)
			}
		}
		return out
	}
	return nil
}

// internal reports whether a named type belongs to an internal package.
func internal(n *types.Named) bool {
	pkg := n.Obj().Pkg()
	return pkg != nil && strings.Contains("/"+pkg.Path()+"/", "/internal/")
}
