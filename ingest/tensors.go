package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"

	"github.com/x448/float16"
)

// ExternalRef is a resolved external-data reference of an initializer.
type ExternalRef struct {
	Path   string // absolute path of the data file, inside the model's directory
	Rel    string // the location as written in the model
	Offset int64
	Length int64
}

// tensorShape returns the declared dims of a TensorProto as a shape, rejecting negatives.
func tensorShape(t *onnxpb.TensorProto) (graph.Shape, error) {
	s := make(graph.Shape, len(t.Dims))
	for i, d := range t.Dims {
		if d < 0 {
			return nil, fmt.Errorf("tensor %q has a negative dimension %d", t.GetName(), d)
		}
		s[i] = graph.Static(d)
	}
	return s, nil
}

// checkInitializer validates an initializer's declared size against the data it carries:
// inline raw_data or typed fields must hold exactly the declared elements, and external data
// must lie inside the model's directory and inside its file.
func (m *Model) checkInitializer(t *onnxpb.TensorProto) error {
	name := t.GetName()
	dt := graph.DType(t.GetDataType())
	if !dt.Valid() {
		return diag.Input("initializer %q has an unknown data type %d", name, t.GetDataType()).About(diag.Tensor, name)
	}
	shape, err := tensorShape(t)
	if err != nil {
		return diag.Wrap(diag.KindInput, err)
	}
	n, err := shape.NumElements()
	if err != nil {
		return diag.Input("initializer %q has dimensions %v whose element count overflows int64", name, t.Dims).About(diag.Tensor, name)
	}
	nbytes, err := graph.ByteSize(dt, shape)
	if err != nil {
		return diag.Input("initializer %q of shape %v has a byte size that overflows int64", name, t.Dims).About(diag.Tensor, name)
	}
	if t.Segment != nil {
		return diag.Input("initializer %q is a segment of a larger tensor, which onnxpart does not support", name).About(diag.Tensor, name)
	}
	if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		ref, err := m.externalRef(t)
		if err != nil {
			return err
		}
		if dt != graph.String && ref.Length != nbytes {
			return diag.Input("initializer %q: external data holds %d bytes but shape %v of %s needs %d", name, ref.Length, t.Dims, dt, nbytes).About(diag.Tensor, name)
		}
		return nil
	}
	if dt == graph.String {
		if int64(len(t.StringData)) != n {
			return diag.Input("initializer %q declares %d strings but holds %d", name, n, len(t.StringData)).About(diag.Tensor, name)
		}
		return nil
	}
	if t.RawData != nil {
		if int64(len(t.RawData)) != nbytes {
			return diag.Input("initializer %q: raw_data holds %d bytes but shape %v of %s needs %d", name, len(t.RawData), t.Dims, dt, nbytes).About(diag.Tensor, name)
		}
		return nil
	}
	have := int64(typedCount(t, dt))
	want := n
	switch dt {
	case graph.Complex64, graph.Complex128:
		want = 2 * n
	case graph.Int4, graph.Uint4, graph.Float4E2M1:
		want = (n + 1) / 2
	case graph.Int2, graph.Uint2:
		want = (n + 3) / 4
	}
	if have != want {
		return diag.Input("initializer %q declares %d elements but holds %d values", name, n, have).About(diag.Tensor, name)
	}
	return nil
}

// typedCount is the number of values in the typed field that holds dt.
func typedCount(t *onnxpb.TensorProto, dt graph.DType) int {
	switch dt {
	case graph.Float, graph.Complex64:
		return len(t.FloatData)
	case graph.Double, graph.Complex128:
		return len(t.DoubleData)
	case graph.Int64:
		return len(t.Int64Data)
	case graph.Uint32, graph.Uint64:
		return len(t.Uint64Data)
	default: // int8/16/32, uint8/16, bool, float16, bfloat16, fp8, int4, …: int32_data
		return len(t.Int32Data)
	}
}

// externalRef resolves and checks an external-data reference: the location is relative to
// the model's directory and must stay inside it (no absolute paths, no .. escapes, no
// symlinks leading out), and offset+length must lie within the file.
func (m *Model) externalRef(t *onnxpb.TensorProto) (*ExternalRef, error) {
	name := t.GetName()
	ref := &ExternalRef{Offset: 0, Length: -1}
	for _, kv := range t.ExternalData {
		switch kv.GetKey() {
		case "location":
			ref.Rel = kv.GetValue()
		case "offset", "length":
			v, err := strconv.ParseInt(kv.GetValue(), 10, 64)
			if err != nil || v < 0 {
				return nil, diag.Input("initializer %q: bad external-data %s %q", name, kv.GetKey(), kv.GetValue()).About(diag.Tensor, name)
			}
			if kv.GetKey() == "offset" {
				ref.Offset = v
			} else {
				ref.Length = v
			}
		}
	}
	if ref.Rel == "" {
		return nil, diag.Input("initializer %q is stored externally but has no location", name).About(diag.Tensor, name)
	}
	p, err := resolveInside(m.Dir, ref.Rel)
	if err != nil {
		return nil, diag.Input("initializer %q: external data location %q: %v", name, ref.Rel, err).About(diag.Tensor, name)
	}
	ref.Path = p
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, diag.Input("initializer %q: external data file %q is missing", name, ref.Rel).About(diag.Tensor, name)
		}
		return nil, diag.Input("initializer %q: external data file %q: %v", name, ref.Rel, err).About(diag.Tensor, name)
	}
	if !fi.Mode().IsRegular() {
		return nil, diag.Input("initializer %q: external data %q is not a regular file", name, ref.Rel).About(diag.Tensor, name)
	}
	if ref.Offset > fi.Size() {
		return nil, diag.Input("initializer %q: external data offset %d is beyond the end of %q (%d bytes)", name, ref.Offset, ref.Rel, fi.Size()).About(diag.Tensor, name)
	}
	if ref.Length < 0 {
		ref.Length = fi.Size() - ref.Offset
	}
	if ref.Offset+ref.Length > fi.Size() || ref.Offset+ref.Length < ref.Offset {
		return nil, diag.Input("initializer %q: external data file %q is too short (%d bytes; the tensor needs bytes %d..%d)", name, ref.Rel, fi.Size(), ref.Offset, ref.Offset+ref.Length).About(diag.Tensor, name)
	}
	return ref, nil
}

// resolveInside joins rel to dir and refuses results outside dir: absolute paths (Windows
// drive letters and UNC paths included), NUL bytes, any ".." component, and symbolic links
// (of the file or of a directory on the way) whose target lies outside dir.
func resolveInside(dir, rel string) (string, error) {
	if rel == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(rel, 0) {
		return "", errors.New("the path contains a NUL byte")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" || hasDriveLetter(rel) {
		return "", errors.New("absolute paths are not allowed; it must be relative to the model's directory")
	}
	// No ".." at all, whichever separator: "sub/../w.bin" is clean lexically, but the
	// system (and ONNX Runtime, which opens the location as written) resolves it through
	// sub, which may be a symbolic link to anywhere.
	for _, part := range strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", errors.New("the path leaves the model's directory (\"..\" is not allowed)")
		}
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	base, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	full := filepath.Join(base, clean)
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	realFull, err := filepath.EvalSymlinks(full)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return full, nil // reported as missing by the caller
		}
		return "", err
	}
	if r, err := filepath.Rel(realBase, realFull); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", errors.New("the path resolves (through a symbolic link) outside the model's directory")
	}
	return full, nil
}

// hasDriveLetter reports a Windows drive prefix ("C:", "c:\\", "D:/"), which is absolute
// (or drive-relative) on Windows even though Linux reads it as a file name.
func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

// ExternalRef returns the resolved external-data reference of an initializer, or nil when
// it is stored inline.
func (m *Model) ExternalRef(name string) (*ExternalRef, error) {
	t := m.inits[name]
	if t == nil || t.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
		return nil, nil
	}
	return m.externalRef(t)
}

// maxFoldElements bounds the size of tensors whose values are decoded for constant folding.
const maxFoldElements = 1 << 14

// maxFoldFloats bounds the float initializers decoded for inference: only small ones matter
// (Resize scales, Clip bounds, Range limits); decoding every weight would dominate load time.
const maxFoldFloats = 64

// initializerValue decodes an initializer for shape inference: integer and bool tensors up to
// maxFoldElements elements (in value encoding), float tensors up to maxFoldFloats.
func (m *Model) initializerValue(t *onnxpb.TensorProto) ([]graph.Dim, []float64) {
	dt := graph.DType(t.GetDataType())
	n := int64(1)
	for _, d := range t.Dims {
		if d < 0 || (d > 0 && n > maxFoldElements/d) {
			return nil, nil
		}
		n *= d
	}
	if dt.IsFloat() && n > maxFoldFloats {
		return nil, nil
	}
	raw, ok := m.rawBytes(t)
	if !ok {
		return nil, nil
	}
	ints, floats, ok := decodeNumbers(dt, raw)
	if !ok {
		return nil, nil
	}
	if dt.IsFloat() {
		return nil, floats
	}
	return dimsOf(ints), nil // an empty tensor has the (known) empty value
}

// rawBytes returns the little-endian bytes of a (small) numeric tensor, reading external
// data when needed. ok is false for strings or tensors over maxFoldElements elements.
func (m *Model) rawBytes(t *onnxpb.TensorProto) ([]byte, bool) {
	dt := graph.DType(t.GetDataType())
	shape, err := tensorShape(t)
	if err != nil || dt.Bits() == 0 {
		return nil, false
	}
	n, err := shape.NumElements()
	if err != nil || n > maxFoldElements {
		return nil, false
	}
	nbytes, _ := graph.ByteSize(dt, shape)
	if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		ref, err := m.externalRef(t)
		if err != nil || ref.Length != nbytes {
			return nil, false
		}
		f, err := os.Open(ref.Path)
		if err != nil {
			return nil, false
		}
		defer f.Close()
		buf := make([]byte, nbytes)
		if _, err := f.ReadAt(buf, ref.Offset); err != nil && !(errors.Is(err, io.EOF) && nbytes == 0) {
			return nil, false
		}
		return buf, true
	}
	buf, err := TensorData(t)
	if err != nil {
		return nil, false
	}
	return buf, true
}

// TensorData returns the little-endian bytes of a tensor stored inline in the model: its
// raw_data, or its typed field (float_data, int32_data, …) converted. The size must match
// the tensor's shape and type.
func TensorData(tp *onnxpb.TensorProto) ([]byte, error) {
	dt := graph.DType(tp.GetDataType())
	want, err := graph.ByteSize(dt, graph.ShapeOf(tp.Dims...))
	if err != nil || want < 0 {
		return nil, fmt.Errorf("weight %q: cannot size %s %v", tp.GetName(), dt, tp.Dims)
	}
	if tp.RawData != nil {
		if int64(len(tp.RawData)) != want {
			return nil, fmt.Errorf("weight %q: raw_data holds %d bytes, want %d", tp.GetName(), len(tp.RawData), want)
		}
		return tp.RawData, nil
	}
	buf := make([]byte, 0, want)
	switch dt {
	case graph.Float, graph.Complex64:
		for _, f := range tp.FloatData {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
		}
	case graph.Double, graph.Complex128:
		for _, f := range tp.DoubleData {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(f))
		}
	case graph.Int64:
		for _, v := range tp.Int64Data {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
		}
	case graph.Uint64:
		for _, v := range tp.Uint64Data {
			buf = binary.LittleEndian.AppendUint64(buf, v)
		}
	case graph.Uint32:
		for _, v := range tp.Uint64Data {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
		}
	case graph.Int32:
		for _, v := range tp.Int32Data {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
		}
	case graph.Int16, graph.Uint16, graph.Float16, graph.BFloat16:
		for _, v := range tp.Int32Data {
			buf = binary.LittleEndian.AppendUint16(buf, uint16(v))
		}
	case graph.Int8, graph.Uint8, graph.Bool, graph.Float8E4M3FN, graph.Float8E4M3FNUZ,
		graph.Float8E5M2, graph.Float8E5M2FNUZ, graph.Float8E8M0:
		for _, v := range tp.Int32Data {
			buf = append(buf, byte(v))
		}
	case graph.Int4, graph.Uint4, graph.Float4E2M1, graph.Int2, graph.Uint2:
		// int32_data holds packed bytes for the sub-byte types
		for _, v := range tp.Int32Data {
			buf = append(buf, byte(v))
		}
	default:
		return nil, fmt.Errorf("weight %q: cannot store %s externally", tp.GetName(), dt)
	}
	if int64(len(buf)) != want {
		return nil, fmt.Errorf("weight %q: holds %d bytes of data, want %d", tp.GetName(), len(buf), want)
	}
	return buf, nil
}

// decodeNumbers decodes a small numeric tensor into float64s (ints exactly up to 2^53) and,
// for integer and bool types, int64s.
func decodeNumbers(dt graph.DType, raw []byte) (ints []int64, floats []float64, ok bool) {
	switch dt {
	case graph.Int64:
		for i := 0; i+8 <= len(raw); i += 8 {
			ints = append(ints, int64(binary.LittleEndian.Uint64(raw[i:])))
		}
	case graph.Uint64:
		for i := 0; i+8 <= len(raw); i += 8 {
			ints = append(ints, int64(binary.LittleEndian.Uint64(raw[i:])))
		}
	case graph.Int32:
		for i := 0; i+4 <= len(raw); i += 4 {
			ints = append(ints, int64(int32(binary.LittleEndian.Uint32(raw[i:]))))
		}
	case graph.Uint32:
		for i := 0; i+4 <= len(raw); i += 4 {
			ints = append(ints, int64(binary.LittleEndian.Uint32(raw[i:])))
		}
	case graph.Int16:
		for i := 0; i+2 <= len(raw); i += 2 {
			ints = append(ints, int64(int16(binary.LittleEndian.Uint16(raw[i:]))))
		}
	case graph.Uint16:
		for i := 0; i+2 <= len(raw); i += 2 {
			ints = append(ints, int64(binary.LittleEndian.Uint16(raw[i:])))
		}
	case graph.Int8:
		for _, b := range raw {
			ints = append(ints, int64(int8(b)))
		}
	case graph.Uint8, graph.Bool:
		for _, b := range raw {
			ints = append(ints, int64(b))
		}
	case graph.Float:
		for i := 0; i+4 <= len(raw); i += 4 {
			floats = append(floats, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))))
		}
		return nil, floats, true
	case graph.Double:
		for i := 0; i+8 <= len(raw); i += 8 {
			floats = append(floats, math.Float64frombits(binary.LittleEndian.Uint64(raw[i:])))
		}
		return nil, floats, true
	case graph.Float16:
		for i := 0; i+2 <= len(raw); i += 2 {
			floats = append(floats, float64(float16.Frombits(binary.LittleEndian.Uint16(raw[i:])).Float32()))
		}
		return nil, floats, true
	case graph.BFloat16:
		for i := 0; i+2 <= len(raw); i += 2 {
			floats = append(floats, float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[i:]))<<16)))
		}
		return nil, floats, true
	default:
		return nil, nil, false
	}
	floats = make([]float64, len(ints))
	for i, v := range ints {
		floats[i] = float64(v)
	}
	return ints, floats, true
}
