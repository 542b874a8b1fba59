package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/onnxpb"
)

// withW makes the tiny model read a [4] float weight w through Add.
func withW(init *onnxpb.TensorProto) *onnxpb.ModelProto {
	return tiny(func(m *onnxpb.ModelProto) {
		m.Graph.Initializer = []*onnxpb.TensorProto{init}
		m.Graph.Node[0] = node("add", "Add", []string{"x", "w"}, []string{"y"})
	})
}

// loadWithin loads path, failing the test (with every goroutine's stack) if it takes longer
// than a generous deadline: a hostile external-data file (a FIFO, a device) must never make
// Load block.
func loadWithin(t *testing.T, path string, opt Options) (*Model, error) {
	t.Helper()
	type result struct {
		m   *Model
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := Load(path, opt)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		return r.m, r.err
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("Load(%s) did not return within 30s:\n%s", path, buf[:n])
		return nil, nil
	}
}

// TestExternalDataEscapes checks that an external-data location can only name a regular
// file inside the model's directory, however it tries to leave it: absolute and
// drive-letter paths, "..", NUL bytes, symbolic links of the file or of a directory on the
// way, special files. Each is one *Error naming the model and the tensor.
func TestExternalDataEscapes(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")   // the model's directory
	outside := filepath.Join(root, "out") // a directory beside it holding a "secret"
	for _, d := range []string{dir, outside, filepath.Join(dir, "inner")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w16 := make([]byte, 16)
	for _, p := range []string{filepath.Join(dir, "w.bin"), filepath.Join(outside, "secret.bin"), filepath.Join(root, "w.bin"), filepath.Join(dir, "inner", "w.bin")} {
		if err := os.WriteFile(p, w16, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	symlink(filepath.Join(outside, "secret.bin"), "abs_link.bin") // absolute target outside
	symlink("../out/secret.bin", "rel_link.bin")                  // relative target outside
	symlink("w.bin", "ok_link.bin")                               // stays inside: allowed
	symlink(outside, "sub")                                       // a directory link leading out
	symlink("/", "root")                                          // … to the root
	symlink("inner", "ok_dir")                                    // a directory link inside: allowed
	symlink("loop", "loop")                                       // a link to itself
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.bin"), 0o644); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		loc  string
		off  int64
		len  int64
		want string // "" for a model that loads
	}{
		{"plain file", "w.bin", 0, 16, ""},
		{"link inside", "ok_link.bin", 0, 16, ""},
		{"through a directory link inside", "ok_dir/w.bin", 0, 16, ""},
		{"dot segments", "./inner/./w.bin", 0, 16, ""},
		{"link to an absolute path outside", "abs_link.bin", 0, 16, "outside the model's directory"},
		{"link to a relative path outside", "rel_link.bin", 0, 16, "outside the model's directory"},
		{"directory link leading out", "sub/secret.bin", 0, 16, "outside the model's directory"},
		{"directory link to /", "root" + outside + "/secret.bin", 0, 16, "outside the model's directory"},
		// Lexically "sub/../w.bin" is w.bin inside the directory; the system resolves it
		// through sub (→ outside) to root/w.bin.
		{"dot-dot after a directory link", "sub/../w.bin", 0, 16, `".." is not allowed`},
		{"dot-dot inside", "inner/../w.bin", 0, 16, `".." is not allowed`},
		{"dot-dot escape", "../w.bin", 0, 16, "leaves the model's directory"},
		{"backslash dot-dot", `inner\..\..\w.bin`, 0, 16, `".." is not allowed`},
		{"absolute", filepath.Join(outside, "secret.bin"), 0, 16, "absolute paths are not allowed"},
		{"UNC path", `\\server\share\w.bin`, 0, 16, "absolute paths are not allowed"},
		{"drive letter, backslash", `C:\Windows\win.ini`, 0, 16, "absolute paths are not allowed"},
		{"drive letter, slash", `d:/w.bin`, 0, 16, "absolute paths are not allowed"},
		{"drive-relative", `c:w.bin`, 0, 16, "absolute paths are not allowed"},
		{"NUL byte", "w.bin\x00", 0, 16, "NUL byte"},
		{"NUL byte then escape", "w.bin\x00/../../out/secret.bin", 0, 16, "NUL byte"},
		{"FIFO", "fifo.bin", 0, 16, "not a regular file"},
		{"directory", "inner", 0, 16, "not a regular file"},
		{"the model's directory", ".", 0, 16, "not a regular file"},
		{"symlink loop", "loop", 0, 16, "initializer \"w\""},
		{"missing", "nothere.bin", 0, 16, "is missing"},
		{"offset past the end", "w.bin", 1 << 62, 16, "beyond the end"},
		{"offset+length overflows", "w.bin", 8, 1<<63 - 1, "too short"},
		{"length past the end", "w.bin", 8, 16, "too short"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeModel(t, dir, fmt.Sprintf("m%02d.onnx", i), withW(externalInit("w", tc.loc, tc.off, tc.len, 4)))
			m, err := loadWithin(t, p, Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				ref, err := m.ExternalRef("w")
				if err != nil || ref == nil || !strings.HasPrefix(ref.Path, dir+string(filepath.Separator)) {
					t.Fatalf("ExternalRef = %+v, %v", ref, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want an error mentioning %q", tc.want)
			}
			checkOneLine(t, err, p, tc.want)
		})
	}
	// Nothing changed on the way: the files outside are as they were.
	for _, p := range []string{filepath.Join(outside, "secret.bin"), filepath.Join(root, "w.bin")} {
		if b, err := os.ReadFile(p); err != nil || len(b) != 16 {
			t.Errorf("%s: %d bytes, %v", p, len(b), err)
		}
	}
}

// checkOneLine checks the error contract: an input *diag.Error, one line, naming the model file and
// the tensor, and saying what is wrong.
func checkOneLine(t *testing.T, err error, path, want string) {
	t.Helper()
	if !isInput(err) {
		t.Errorf("want an input *diag.Error, got %T: %v", err, err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r\x00") {
		t.Errorf("message is not one printable line: %q", msg)
	}
	for _, w := range []string{path, `"w"`, want} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not mention %q", msg, w)
		}
	}
}

// TestExternalDataReplacedAfterLoad: the checked resolution is redone for every use, so a
// data file swapped for a link leading outside after Load is refused by ExternalRef (which
// emit uses to copy weights) rather than followed.
func TestExternalDataReplacedAfterLoad(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, 16), 0o644)
	os.WriteFile(filepath.Join(root, "secret.bin"), make([]byte, 16), 0o644)
	p := writeModel(t, dir, "m.onnx", withW(externalInit("w", "w.bin", 0, 16, 4)))
	m, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "w.bin"))
	if err := os.Symlink(filepath.Join(root, "secret.bin"), filepath.Join(dir, "w.bin")); err != nil {
		t.Fatal(err)
	}
	if ref, err := m.ExternalRef("w"); err == nil {
		t.Fatalf("ExternalRef after the swap = %+v, want an error", ref)
	} else if !strings.Contains(err.Error(), "outside the model's directory") {
		t.Errorf("got %v", err)
	}
}

// TestHugeDeclarationsAllocateNothing: sizes are checked before anything is read or
// allocated. A model file over the limit is refused from its size alone (a sparse 2 GiB
// file), and a shape tensor whose external data is a sparse 4 GiB file is never decoded,
// nor is its length (2^29) taken as the rank of the Reshape's output (the rank bound).
// Without the file-size limit, the fold limit or the rank bound, this allocates GiBs.
func TestHugeDeclarationsAllocateNothing(t *testing.T) {
	dir := t.TempDir()
	allocs := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Skipf("cannot make a sparse %d-byte file: %v", size, err)
		}
		return p
	}

	// A 2 GiB + 1 byte "model" (sparse: it costs no disk).
	big := sparse("big.onnx", DefaultMaxFileBytes+2)
	var err error
	if n := allocs(func() { _, err = loadWithin(t, big, Options{}) }); n > 16<<20 {
		t.Errorf("refusing a %d-byte model allocated %d bytes", int64(DefaultMaxFileBytes+2), n)
	}
	if err == nil || !strings.Contains(err.Error(), "over the") || !strings.Contains(err.Error(), "big.onnx") {
		t.Errorf("2 GiB model: %v", err)
	}
	// A lower limit applies the same way.
	small := writeModel(t, dir, "small.onnx", tiny(nil))
	if _, err := Load(small, Options{MaxFileBytes: 10}); err == nil || !strings.Contains(err.Error(), "10-byte limit") {
		t.Errorf("MaxFileBytes: %v", err)
	}

	// A Reshape whose shape is an int64 tensor of 2^29 elements in a sparse 4 GiB file:
	// valid as declared, but far too large to decode for shape inference.
	sparse("shape.bin", 4<<30)
	p := writeModel(t, dir, "reshape.onnx", tiny(func(m *onnxpb.ModelProto) {
		s := externalInit("s", "shape.bin", 0, 4<<30, 1<<29)
		s.DataType = proto.Int32(int32(onnxpb.TensorProto_INT64))
		m.Graph.Initializer = []*onnxpb.TensorProto{s}
		m.Graph.Node[0] = node("reshape", "Reshape", []string{"x", "s"}, []string{"y"})
	}))
	if n := allocs(func() { _, err = loadWithin(t, p, Options{}) }); n > 64<<20 {
		t.Errorf("loading a model with a 4 GiB shape tensor allocated %d bytes (%v)", n, err)
	}
}
