package onnxpart_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// libraryFiles returns the module's non-test Go files by package directory (slash-separated,
// relative to the module root; "." for the root), leaving out testdata, hidden directories
// and nested modules (examples).
func libraryFiles(t *testing.T) map[string][]string {
	t.Helper()
	files := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == "." {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(p))
			files[dir] = append(files[dir], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// underAny reports whether dir is one of roots or below one.
func underAny(dir string, roots []string) string {
	for _, r := range roots {
		if dir == r || strings.HasPrefix(dir, r+"/") {
			return r
		}
	}
	return ""
}

// opTypeNames returns the constants of internal/ops/optype: one per operator type.
func opTypeNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "internal/ops/optype/optype.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, sp := range gd.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					names[n.Name] = true
				}
			}
		}
	}
	if len(names) < 100 {
		t.Fatalf("internal/ops/optype has %d constants; the parse missed them", len(names))
	}
	return names
}

// opTypeLiteralAllowed are the packages that may spell an operator type as a string
// literal: the op registry itself, the model generators, and programs.
var opTypeLiteralAllowed = []string{
	"internal/ops",       // the registry (and optype, below it)
	"internal/genaigen",  // generator of GenAI-builder models (and its program)
	"internal/llamagen",  // generator of Llama-like models (and its program)
	"internal/testmodel", // generator of the tests' models
	"internal/hugemodel", // generator of models over 2 GiB
	"bench",              // benchmark programs
}

// opTypeLiteralPending are packages that still spell operator types as literals and are
// being converted (#38); an entry leaves the list when its package passes.
var opTypeLiteralPending = []string{}

// TestOpTypeLiteralsOnlyInRegistry: an operator type ("MatMul") is named as a string literal
// only in the op registry, generators and programs; library code and the command name it
// through internal/ops/optype, so that the registry is the one place an op is spelt.
func TestOpTypeLiteralsOnlyInRegistry(t *testing.T) {
	names := opTypeNames(t)
	fset := token.NewFileSet()
	pendingLeft := map[string]int{}
	for dir, paths := range libraryFiles(t) {
		if underAny(dir, opTypeLiteralAllowed) != "" {
			continue
		}
		pending := underAny(dir, opTypeLiteralPending)
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.ImportSpec, *ast.Field:
					return false // import paths, struct tags
				case *ast.BasicLit:
					if s, err := strconv.Unquote(x.Value); x.Kind == token.STRING && err == nil && names[s] {
						if pending != "" {
							pendingLeft[pending]++
						} else {
							t.Errorf("%s: op type %q as a string literal; use optype.%s", fset.Position(x.Pos()), s, s)
						}
					}
				}
				return true
			})
		}
	}
	for _, p := range opTypeLiteralPending {
		if pendingLeft[p] == 0 {
			t.Errorf("%s spells no op type as a literal any more: remove it from opTypeLiteralPending", p)
		}
	}
}

// flagLike is a command-line flag in a string: "--force", "(use --dim)", not a CSS custom
// property ("--ink: #1f2328"; cssVar, "var(--ink)", is taken out first).
var (
	flagLike = regexp.MustCompile("(^|[\\s\"'`(\\[])--[a-z][a-z0-9-]*([^a-z0-9:-]|$)")
	cssVar   = regexp.MustCompile(`var\(--[a-z0-9-]+\)`)
)

// flagNamePending are packages whose messages still name the command's flags and are being
// converted to diag.Names (#38); an entry leaves the list when its package passes.
var flagNamePending = []string{}

// TestFlagNamesOnlyInCmd: library packages speak of options, not of the command's flags
// ("--force"): an error or note names an option through diag.Names, which the command fills
// with its flags and a Go caller leaves empty. Programs (package main: the command, bench/,
// the generators' programs) may name flags.
func TestFlagNamesOnlyInCmd(t *testing.T) {
	fset := token.NewFileSet()
	pendingLeft := map[string]int{}
	for dir, paths := range libraryFiles(t) {
		pending := underAny(dir, flagNamePending)
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name.Name == "main" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				x, ok := n.(*ast.BasicLit)
				if !ok || x.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(x.Value)
				if err != nil || !flagLike.MatchString(cssVar.ReplaceAllString(s, "")) {
					return true
				}
				if pending != "" {
					pendingLeft[pending]++
				} else {
					t.Errorf("%s: a flag in a library's string %.60q: name the option through diag.Names", fset.Position(x.Pos()), s)
				}
				return true
			})
		}
	}
	for _, p := range flagNamePending {
		if pendingLeft[p] == 0 {
			t.Errorf("%s names no flag any more: remove it from flagNamePending", p)
		}
	}
}
