package emit_test

import (
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestNoONNXRuntime keeps emit free of ONNX Runtime: writing stage files must build and
// run without its shared library, which only verify, pipebench and profile's measurements
// load. It fails when emit imports internal/ort or the ONNX Runtime bindings, directly or
// through any package it imports.
func TestNoONNXRuntime(t *testing.T) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps}
	pkgs, err := packages.Load(cfg, "github.com/onnxpart/onnxpart/emit")
	if err != nil {
		t.Skipf("loading the package: %v", err)
	}
	forbidden := func(path string) bool {
		return path == "github.com/onnxpart/onnxpart/internal/ort" || strings.HasPrefix(path, "github.com/yalue/onnxruntime_go")
	}
	seen := map[string]bool{}
	var walk func(p *packages.Package, chain []string)
	walk = func(p *packages.Package, chain []string) {
		if seen[p.PkgPath] {
			return
		}
		seen[p.PkgPath] = true
		chain = append(chain, p.PkgPath)
		if forbidden(p.PkgPath) {
			t.Errorf("emit imports ONNX Runtime: %s", strings.Join(chain, " → "))
			return
		}
		for _, q := range p.Imports {
			walk(q, chain)
		}
	}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors[0])
		}
		walk(p, nil)
	}
	if len(seen) < 2 {
		t.Fatalf("found %d packages; the import graph did not load", len(seen))
	}
}
