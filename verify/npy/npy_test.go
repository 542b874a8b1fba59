package npy

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

func TestRoundTrip(t *testing.T) {
	for _, a := range []*Array{
		{DType: graph.Float, Shape: []int64{2, 3}, Data: bytes.Repeat([]byte{1, 2, 3, 4}, 6)},
		{DType: graph.Int64, Shape: []int64{1, 128}, Data: make([]byte, 8*128)},
		{DType: graph.Float16, Shape: []int64{4}, Data: []byte{0, 60, 0, 188, 0, 0, 255, 123}},
		{DType: graph.Bool, Shape: []int64{3}, Data: []byte{1, 0, 1}},
		{DType: graph.Uint8, Shape: []int64{}, Data: []byte{7}},
	} {
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		if (buf.Len()-len(a.Data))%64 != 0 {
			t.Errorf("%s: header not padded to 64 bytes", a.DType)
		}
		b, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if b.DType != a.DType || !bytes.Equal(b.Data, a.Data) || len(b.Shape) != len(a.Shape) {
			t.Errorf("%s: got %+v", a.DType, b)
		}
	}
}

// raw builds an .npy stream by hand, as numpy writes it.
func raw(version byte, header string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x93NUMPY")
	b.WriteByte(version)
	b.WriteByte(0)
	if version == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(header)))
	}
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestReadVariants(t *testing.T) {
	// Big-endian int32 [1, 2] in a version 2.0 file.
	a, err := Read(bytes.NewReader(raw(2, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n", []byte{0, 0, 0, 1, 0, 0, 0, 2})))
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != graph.Int32 || !bytes.Equal(a.Data, []byte{1, 0, 0, 0, 2, 0, 0, 0}) {
		t.Errorf("big-endian: %+v", a)
	}
	// Fortran order: a 2×3 uint8 array [[1,2,3],[4,5,6]] stored column by column.
	a, err = Read(bytes.NewReader(raw(1, "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }\n", []byte{1, 4, 2, 5, 3, 6})))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Data, []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("fortran order: %v", a.Data)
	}
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte("PK\x03\x04"), "too short"},
		{[]byte("notnumpy-file"), "bad magic"},
		{raw(1, "{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }", nil), "unsupported .npy dtype"},
		{raw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", []byte{1, 2, 3}), "truncated"},
		{raw(1, "{'descr': '<f4', 'shape': ('a',), }", nil), "bad .npy header"},
		{raw(9, "{}", nil), "unsupported .npy version"},
	} {
		_, err := Read(bytes.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// TestNumpyInterop: numpy reads what Write writes, and Read reads what numpy.save writes
// (little- and big-endian, C and Fortran order).
func TestNumpyInterop(t *testing.T) {
	py := ""
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no Python with numpy")
	}
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.npy")
	f, _ := os.Create(ours)
	data := make([]byte, 4*6)
	for i := 0; i < 6; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)+0.5))
	}
	if err := Write(f, &Array{DType: graph.Float, Shape: []int64{2, 3}, Data: data}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	script := `
import sys, numpy as np
a = np.load(sys.argv[1])
assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)
assert (a == np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5).all(), a
x = np.arange(6, dtype=np.int64).reshape(2, 3)
np.save(sys.argv[2] + "/c.npy", x)
np.save(sys.argv[2] + "/f.npy", np.asfortranarray(x))
np.save(sys.argv[2] + "/be.npy", x.astype(">i8"))
`
	if out, err := exec.Command(py, "-c", script, ours, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	for _, name := range []string{"c.npy", "f.npy", "be.npy"} {
		a, err := ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if a.DType != graph.Int64 || len(a.Shape) != 2 || a.Shape[0] != 2 || a.Shape[1] != 3 {
			t.Fatalf("%s: %+v", name, a)
		}
		for i := 0; i < 6; i++ {
			if v := binary.LittleEndian.Uint64(a.Data[8*i:]); v != uint64(i) {
				t.Errorf("%s: element %d is %d", name, i, v)
			}
		}
	}
}

// TestReadHugeHeaderSmallFile checks that a tiny file whose header claims a huge array fails
// on its real size without allocating what the header claims.
func TestReadHugeHeaderSmallFile(t *testing.T) {
	hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }"
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
	b = append(b, hdr...)
	b = append(b, make([]byte, 64)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(b))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("want a truncation error, got %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("reading a %d-byte file allocated %d bytes", len(b), grew)
	}
}

// TestEmptyArray: an array with a 0 in its shape (a decoder's past keys at prefill, [1,2,0,4])
// goes through Write and Read, a file and numpy's own spellings of its header (Fortran order,
// a version 2.0 file) with its shape and no data; a byte of data for it is refused.
func TestEmptyArray(t *testing.T) {
	for _, dt := range []graph.DType{graph.Float, graph.Float16, graph.Int64, graph.Bool} {
		a := &Array{DType: dt, Shape: []int64{1, 2, 0, 4}, Data: []byte{}}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if buf.Len()%64 != 0 {
			t.Errorf("%s: %d bytes, want the padded header alone", dt, buf.Len())
		}
		p := filepath.Join(t.TempDir(), "empty.npy")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if b.DType != dt || len(b.Shape) != 4 || b.Shape[0] != 1 || b.Shape[1] != 2 || b.Shape[2] != 0 || b.Shape[3] != 4 || len(b.Data) != 0 {
			t.Errorf("%s: read back %+v", dt, b)
		}
		// Nil data is as empty as an empty slice.
		if err := Write(io.Discard, &Array{DType: dt, Shape: []int64{0}}); err != nil {
			t.Errorf("%s: nil data for shape [0]: %v", dt, err)
		}
		if err := Write(io.Discard, &Array{DType: dt, Shape: []int64{1, 2, 0, 4}, Data: []byte{0}}); err == nil {
			t.Errorf("%s: a byte of data for an empty shape was written", dt)
		}
	}
	for _, hdr := range []string{
		"{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2, 0, 4), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n",
	} {
		for _, v := range []byte{1, 2} {
			a, err := Read(bytes.NewReader(raw(v, hdr, nil)))
			if err != nil {
				t.Fatalf("%q: %v", hdr, err)
			}
			if n, _ := graph.ShapeOf(a.Shape...).NumElements(); n != 0 || len(a.Data) != 0 || a.DType != graph.Float {
				t.Errorf("%q: %+v", hdr, a)
			}
		}
	}
}
