// Package npy reads and writes NumPy .npy files (format versions 1.0, 2.0 and 3.0), the
// form in which users hand real input data to `onnxpart verify --input name=file.npy`.
//
// What goes in: an .npy stream holding a numeric or bool array (little- or big-endian,
// C or Fortran order). What comes out: the array as an ONNX element type, a shape, and its
// elements as little-endian bytes in C (row-major) order — the raw form ONNX Runtime takes.
// Write produces version 1.0 files that numpy.load reads.
//
// It sits under verify because feeding real data to verification is what it is for;
// `onnxpart bench --input` (package pipebench) reads the same files. Neither emit nor the
// planners read array data.
package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
)

// Array is a dense array: elements as little-endian bytes in C order.
type Array struct {
	DType graph.DType
	Shape []int64
	Data  []byte
}

var magic = []byte("\x93NUMPY")

// descr codes (without byte-order character) → ONNX types.
var kinds = map[string]graph.DType{
	"f2": graph.Float16, "f4": graph.Float, "f8": graph.Double,
	"i1": graph.Int8, "i2": graph.Int16, "i4": graph.Int32, "i8": graph.Int64,
	"u1": graph.Uint8, "u2": graph.Uint16, "u4": graph.Uint32, "u8": graph.Uint64,
	"b1": graph.Bool,
}

// MaxBytes bounds the data an .npy file may declare (16 GiB).
const MaxBytes = 16 << 30

// ReadFile reads an .npy file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := Read(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Read decodes an .npy stream.
func Read(r io.Reader) (*Array, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, errors.New("not an .npy file (too short)")
	}
	if !bytes.Equal(pre[:6], magic) {
		return nil, errors.New("not an .npy file (bad magic)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, errors.New("truncated .npy header")
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, errors.New("truncated .npy header")
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
		if hlen > 1<<20 {
			return nil, fmt.Errorf(".npy header of %d bytes is too long", hlen)
		}
	default:
		return nil, fmt.Errorf("unsupported .npy version %d.%d", pre[6], pre[7])
	}
	header := make([]byte, hlen)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, errors.New("truncated .npy header")
	}
	h, err := parseHeader(string(header))
	if err != nil {
		return nil, err
	}
	descr, _ := h["descr"].(string)
	if len(descr) != 3 {
		return nil, fmt.Errorf("unsupported .npy dtype %q", descr)
	}
	order, code := descr[0], descr[1:]
	dt, ok := kinds[code]
	if !ok || !strings.ContainsRune("<>|=", rune(order)) {
		return nil, fmt.Errorf("unsupported .npy dtype %q (want a numeric or bool type)", descr)
	}
	fortran, _ := h["fortran_order"].(bool)
	shapeAny, ok := h["shape"].([]int64)
	if !ok {
		return nil, errors.New(".npy header has no shape")
	}
	shape := append([]int64{}, shapeAny...)
	n, err := graph.ShapeOf(shape...).NumElements()
	if err != nil {
		return nil, err
	}
	size := int64(dt.Bits() / 8)
	if n > MaxBytes/size {
		return nil, fmt.Errorf(".npy array of %d elements is too large", n)
	}
	// Read what the file has rather than allocating what the header claims: a short file
	// cannot make us allocate gigabytes.
	data, err := io.ReadAll(io.LimitReader(r, n*size))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != n*size {
		return nil, fmt.Errorf(".npy data is truncated (have %d bytes, the header's shape needs %d)", len(data), n*size)
	}
	if order == '>' && size > 1 {
		for i := int64(0); i < n; i++ {
			e := data[i*size : (i+1)*size]
			for a, b := 0, len(e)-1; a < b; a, b = a+1, b-1 {
				e[a], e[b] = e[b], e[a]
			}
		}
	}
	if fortran && len(shape) > 1 {
		data = fortranToC(data, shape, size)
	}
	return &Array{DType: dt, Shape: shape, Data: data}, nil
}

// fortranToC reorders column-major elements into row-major order.
func fortranToC(data []byte, shape []int64, size int64) []byte {
	out := make([]byte, len(data))
	n := int64(len(data)) / size
	idx := make([]int64, len(shape))
	// Walk C order; compute the Fortran offset of each index.
	for c := int64(0); c < n; c++ {
		f, stride := int64(0), int64(1)
		for d := 0; d < len(shape); d++ {
			f += idx[d] * stride
			stride *= shape[d]
		}
		copy(out[c*size:(c+1)*size], data[f*size:(f+1)*size])
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// parseHeader parses the Python dict literal of an .npy header:
// {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }
func parseHeader(s string) (map[string]any, error) {
	p := &parser{s: strings.TrimSpace(s)}
	v, err := p.value()
	if err != nil {
		return nil, fmt.Errorf("bad .npy header %q: %v", s, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("bad .npy header %q: not a dict", s)
	}
	return m, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\n\r", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *parser) value() (any, error) {
	p.skip()
	if p.i >= len(p.s) {
		return nil, errors.New("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		for {
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return m, nil
			}
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, errors.New("dict key is not a string")
			}
			p.skip()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, errors.New("missing ':'")
			}
			p.i++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			m[ks] = v
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			}
		}
	case c == '(' || c == '[':
		end := byte(')')
		if c == '[' {
			end = ']'
		}
		p.i++
		var out []int64
		for {
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == end {
				p.i++
				return out, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n, ok := v.(int64)
			if !ok {
				return nil, errors.New("shape entry is not an integer")
			}
			out = append(out, n)
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			}
		}
	case c == '\'' || c == '"':
		j := strings.IndexByte(p.s[p.i+1:], c)
		if j < 0 {
			return nil, errors.New("unterminated string")
		}
		v := p.s[p.i+1 : p.i+1+j]
		p.i += j + 2
		return v, nil
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	case c >= '0' && c <= '9':
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad integer %q", p.s[p.i:j])
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 longs
			p.i++
		}
		return n, nil
	}
	return nil, fmt.Errorf("unexpected %q", p.s[p.i])
}

// Write encodes an array as an .npy version 1.0 stream.
func Write(w io.Writer, a *Array) error {
	code := ""
	for c, dt := range kinds {
		if dt == a.DType {
			code = c
		}
	}
	if code == "" {
		return fmt.Errorf("cannot write %s arrays to .npy", a.DType)
	}
	n, err := graph.ShapeOf(a.Shape...).NumElements()
	if err != nil {
		return err
	}
	if int64(len(a.Data)) != n*int64(a.DType.Bits()/8) {
		return fmt.Errorf("%d bytes for %d elements of %s", len(a.Data), n, a.DType)
	}
	order := "<"
	if a.DType.Bits() == 8 {
		order = "|"
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	shape := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	shape += ")"
	header := fmt.Sprintf("{'descr': '%s%s', 'fortran_order': False, 'shape': %s, }", order, code, shape)
	// Pad with spaces so that magic+version+length+header+'\n' is a multiple of 64.
	total := len(magic) + 2 + 2 + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	if len(header) > math.MaxUint16 {
		return errors.New("shape too long for an .npy 1.0 header")
	}
	var pre [10]byte
	copy(pre[:], magic)
	pre[6], pre[7] = 1, 0
	binary.LittleEndian.PutUint16(pre[8:], uint16(len(header)))
	if _, err := w.Write(pre[:]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}
