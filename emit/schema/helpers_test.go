package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/internal/ort"
)

var (
	// repoModel is the model kept in the repository; every test that needs one real output
	// uses it, so that they run without the shared corpus.
	repoModel = filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx")
	// corpusDir is the shared model corpus (real architectures, small weights).
	corpusDir = filepath.Join("..", "..", "..", "shared", "models")
	devSpecs  = filepath.Join("..", "..", "testdata", "devices")
)

// corpusModels lists the corpus's .onnx files (external/ included), sorted; it skips the
// test when the corpus is absent.
func corpusModels(t *testing.T) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".onnx" {
			out = append(out, p)
		}
		return nil
	})
	if len(out) == 0 {
		t.Skip("model corpus not found at " + corpusDir)
	}
	sort.Strings(out)
	return out
}

func needORT(t *testing.T) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
}

// mustValidate checks doc strictly against the schema (undeclared fields fail too).
func mustValidate(t *testing.T, name, what string, doc []byte) {
	t.Helper()
	if err := schema.ValidateStrict(name, doc); err != nil {
		t.Errorf("%s does not satisfy %s:\n%v", what, name, err)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cli builds cmd/onnxpart once per test binary.
var cli struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func onnxpartBinary(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		cli.dir, cli.err = os.MkdirTemp("", "onnxpart-schema-test-")
		if cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "onnxpart")
		cmd := exec.Command(goTool(), "build", "-o", cli.path, "github.com/onnxpart/onnxpart/cmd/onnxpart")
		cli.out, cli.err = cmd.CombinedOutput()
	})
	if cli.err != nil {
		t.Fatalf("building cmd/onnxpart: %v\n%s", cli.err, cli.out)
	}
	return cli.path
}

func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

// runCLI runs the built onnxpart in dir and returns its stdout; a non-zero exit fails.
func runCLI(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(onnxpartBinary(t), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("onnxpart %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// edit decodes doc, applies f to it and encodes it again.
func edit(t *testing.T, doc []byte, f func(v any)) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	f(v)
	return marshal(t, v)
}

// at follows a path of object keys and array indices ("stages", "0", "sha256") and returns
// the object or array holding the last element and the last element's key.
func at(t *testing.T, v any, path string) (parent any, key string) {
	t.Helper()
	parts := strings.Split(path, "/")
	for _, p := range parts[:len(parts)-1] {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(x) {
				t.Fatalf("bad path %s at %s", path, p)
			}
			v = x[i]
		default:
			t.Fatalf("bad path %s at %s", path, p)
		}
	}
	if _, ok := v.(map[string]any); !ok {
		t.Fatalf("path %s: not an object field", path)
	}
	return v, parts[len(parts)-1]
}

func deleteField(t *testing.T, path string) func(any) {
	return func(v any) {
		obj, key := at(t, v, path)
		m := obj.(map[string]any)
		if _, ok := m[key]; !ok {
			t.Fatalf("no field %s to delete", path)
		}
		delete(m, key)
	}
}

func setField(t *testing.T, path string, val any) func(any) {
	return func(v any) {
		obj, key := at(t, v, path)
		obj.(map[string]any)[key] = val
	}
}

func renameField(t *testing.T, path, to string) func(any) {
	return func(v any) {
		obj, key := at(t, v, path)
		m := obj.(map[string]any)
		val, ok := m[key]
		if !ok {
			t.Fatalf("no field %s to rename", path)
		}
		delete(m, key)
		m[to] = val
	}
}
