package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

// TestMain lets the scripts in testdata/script run `onnxpart` as a command in-process.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"onnxpart": func() {
			fi, _ := os.Stderr.Stat()
			e := &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin,
				isTTY: fi != nil && fi.Mode()&os.ModeCharDevice != 0}
			os.Exit(run(context.Background(), e, os.Args[1:]))
		},
	})
}

// TestScripts runs the CLI scripts: each is a command line with its expected stdout, stderr,
// exit status and files ($MODELS is the shared model corpus).
func TestScripts(t *testing.T) {
	models, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	if err != nil {
		t.Fatal(err)
	}
	testdata, _ := filepath.Abs(filepath.Join("..", "..", "testdata"))
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		// [corpus] holds when the shared model corpus is present next to the repository.
		Condition: func(cond string) (bool, error) {
			if cond == "corpus" {
				_, err := os.Stat(filepath.Join(models, "squeezenet1_1.onnx"))
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// llamagen FILE LAYERS: writes a Llama-style decoder (internal/llamagen's Tiny with
			// LAYERS layers) to FILE.
			"llamagen": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 || neg {
					ts.Fatalf("usage: llamagen FILE LAYERS")
				}
				c := llamagen.Tiny
				n, err := strconv.Atoi(args[1])
				if err != nil {
					ts.Fatalf("llamagen: layers %q: %v", args[1], err)
				}
				c.Layers = n
				c.Name = strings.TrimSuffix(filepath.Base(args[0]), ".onnx")
				if _, err := llamagen.Write(filepath.Dir(ts.MkAbs(args[0])), c); err != nil {
					ts.Fatalf("llamagen: %v", err)
				}
			},
			// genaigen FILE LAYERS [fp32|separate|novi|kvdim|hybrid]...: writes a decoder in ONNX Runtime
			// GenAI's model-builder form (internal/genaigen's Tiny, int4, with LAYERS layers)
			// to FILE, and genai_config.json beside it.
			"genaigen": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 || neg {
					ts.Fatalf("usage: genaigen FILE LAYERS [fp32|separate|novi|kvdim|hybrid]...")
				}
				c := genaigen.Tiny
				n, err := strconv.Atoi(args[1])
				if err != nil {
					ts.Fatalf("genaigen: layers %q: %v", args[1], err)
				}
				c.Layers = n
				c.Name = strings.TrimSuffix(filepath.Base(args[0]), ".onnx")
				for _, o := range args[2:] {
					switch o {
					case "fp32":
						c.Int4 = false
					case "separate":
						c.Rotary = genaigen.RotarySeparate
					case "novi":
						c.ValueInfo = false
					case "kvdim":
						c.KVCacheDim = true
					case "hybrid": // three linear-attention layers, then one full-attention layer
						c.FullEvery, c.LinearHeads, c.ConvKernel = 4, 2, 4
					default:
						ts.Fatalf("genaigen: option %q", o)
					}
				}
				if _, err := genaigen.Write(filepath.Dir(ts.MkAbs(args[0])), c); err != nil {
					ts.Fatalf("genaigen: %v", err)
				}
			},
			// schema NAME FILE|stdout: the document satisfies emit/schema's NAME strictly.
			"schema": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: schema NAME FILE")
				}
				err := schema.ValidateStrict(args[0], []byte(ts.ReadFile(args[1])))
				if neg != (err != nil) {
					ts.Fatalf("schema %s %s: %v (negated: %v)", args[0], args[1], err, neg)
				}
			},
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("MODELS", models)
			env.Setenv("BENCH", filepath.Join(filepath.Dir(models), "benchmarks"))
			env.Setenv("TESTDATA", testdata)
			for _, k := range []string{"ONNXPART_ORT_LIB", "HOME", "XDG_CACHE_HOME", "ONNXPART_CACHE"} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			return nil
		},
	})
}
