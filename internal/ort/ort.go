// Package ort runs ONNX models in ONNX Runtime (the CPU build of ORT 1.30.0 that the
// Makefile installs from the npm registry) through github.com/yalue/onnxruntime_go.
//
// What goes in: a model path, input and output names, and tensors as raw little-endian bytes
// with an ONNX dtype and shape. What comes out: the outputs in the same raw form, so callers
// can compare results bit for bit whatever the element type (fp16 and bf16 included).
//
// The shared library is found through $ONNXPART_ORT_LIB, else in the onnxpart cache
// (${XDG_CACHE_HOME:-$HOME/.cache}/onnxpart/onnxruntime-1.30.0/libonnxruntime.so.1).
package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/onnxpart/onnxpart/graph"
)

// Version is the ONNX Runtime release onnxpart is built and tested against.
const Version = "1.30.0"

// LibraryPath locates libonnxruntime.so.1.
func LibraryPath() (string, error) {
	if p := os.Getenv("ONNXPART_ORT_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ONNXPART_ORT_LIB=%s: %w", p, err)
		}
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("cannot locate ONNX Runtime: set ONNXPART_ORT_LIB")
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "onnxpart", "onnxruntime-"+Version, "libonnxruntime.so.1")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("ONNX Runtime not found at %s (run `make deps` or set ONNXPART_ORT_LIB)", p)
	}
	return p, nil
}

var (
	initOnce sync.Once
	initErr  error
)

// Init loads the ONNX Runtime library once per process.
func Init() error {
	initOnce.Do(func() {
		p, err := LibraryPath()
		if err != nil {
			initErr = err
			return
		}
		ortgo.SetSharedLibraryPath(p)
		if err := ortgo.InitializeEnvironment(ortgo.WithLogLevelError()); err != nil {
			initErr = fmt.Errorf("loading ONNX Runtime from %s: %w", p, err)
		}
	})
	return initErr
}

// Tensor is a dense tensor in raw little-endian form: graph.Value, the public type the
// feeds and results of onnxpart's API use.
type Tensor = graph.Value

// Options for a session.
type Options struct {
	// Optimize enables all graph optimizations; false disables them (ORT_DISABLE_ALL), the
	// mode in which chained stages must match the whole model bit for bit.
	Optimize bool
	// Threads is the intra-op thread count (0 means 1, for reproducible timings and results).
	Threads int
	// ProfilePrefix, when set, enables ORT's profiler; the JSON trace is written when the
	// session is closed, to a file whose name starts with this prefix.
	ProfilePrefix string
	// LowMemory trades speed for memory on large models: no CPU memory arena, no memory
	// pattern planning, and no pre-packed copies of the weights (session.disable_prepacking).
	LowMemory bool
}

// Session is a loaded model ready to run.
type Session struct {
	s       *ortgo.DynamicAdvancedSession
	inputs  []string
	outputs []string
	// outSpec gives preallocation hints for outputs: scalars and non-native element types
	// must be preallocated (the Go binding cannot return them otherwise).
	outSpec map[string]*Tensor
}

// OutputHint describes an expected output so that it can be preallocated.
type OutputHint struct {
	DType graph.DType
	Shape []int64 // nil when unknown
}

// NewSession loads modelPath (by path, so external data resolves relative to it).
func NewSession(modelPath string, inputs, outputs []string, opt Options) (*Session, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	level := ortgo.GraphOptimizationLevel(ortgo.GraphOptimizationLevelDisableAll)
	if opt.Optimize {
		level = ortgo.GraphOptimizationLevel(ortgo.GraphOptimizationLevelEnableAll)
	}
	if err := so.SetGraphOptimizationLevel(level); err != nil {
		return nil, err
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = 1
	}
	if err := so.SetIntraOpNumThreads(threads); err != nil {
		return nil, err
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return nil, err
	}
	if opt.LowMemory {
		if err := so.SetCpuMemArena(false); err != nil {
			return nil, err
		}
		if err := so.SetMemPattern(false); err != nil {
			return nil, err
		}
		if err := so.AddSessionConfigEntry("session.disable_prepacking", "1"); err != nil {
			return nil, err
		}
	}
	if opt.ProfilePrefix != "" {
		if err := so.EnableProfiling(opt.ProfilePrefix); err != nil {
			return nil, err
		}
	}
	s, err := ortgo.NewDynamicAdvancedSession(modelPath, inputs, outputs, so)
	if err != nil {
		return nil, fmt.Errorf("ONNX Runtime cannot load %s: %w", modelPath, err)
	}
	return &Session{s: s, inputs: inputs, outputs: outputs}, nil
}

// Close releases the session (and writes the profile when profiling).
func (s *Session) Close() error {
	if s.s == nil {
		return nil
	}
	err := s.s.Destroy()
	s.s = nil
	return err
}

// Outputs returns the names of the session's outputs, in the order they were given.
func (s *Session) Outputs() []string { return s.outputs }

// Run feeds inputs by name and returns every output by name. hints (optional, by output
// name) let outputs that are scalars or have non-native element types (fp16, bf16, fp8) be
// preallocated, which they must be.
func (s *Session) Run(feeds map[string]*Tensor, hints map[string]OutputHint) (map[string]*Tensor, error) {
	ins := make([]ortgo.Value, len(s.inputs))
	defer func() {
		for _, v := range ins {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, name := range s.inputs {
		t, ok := feeds[name]
		if !ok {
			return nil, fmt.Errorf("no value for input %q", name)
		}
		v, err := toValue(t)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		ins[i] = v
	}
	outs := make([]ortgo.Value, len(s.outputs))
	defer func() {
		for _, v := range outs {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, name := range s.outputs {
		h, ok := hints[name]
		if !ok {
			continue
		}
		if h.Shape == nil {
			if !native(h.DType) {
				return nil, fmt.Errorf("output %q of type %s needs a known shape to be read", name, h.DType)
			}
			continue
		}
		if len(h.Shape) == 0 || !native(h.DType) {
			v, err := toValue(zeroTensor(h))
			if err != nil {
				return nil, fmt.Errorf("output %q: %w", name, err)
			}
			outs[i] = v
		}
	}
	if err := s.s.Run(ins, outs); err != nil {
		return nil, err
	}
	res := make(map[string]*Tensor, len(outs))
	for i, name := range s.outputs {
		t, err := fromValue(outs[i])
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		res[name] = t
	}
	return res, nil
}

func zeroTensor(h OutputHint) *Tensor {
	t := &Tensor{DType: h.DType, Shape: h.Shape}
	b, _ := graph.ByteSize(h.DType, graph.ShapeOf(h.Shape...))
	t.Data = make([]byte, max(b, 0))
	return t
}

// native reports whether the Go binding has a typed tensor for dt.
func native(dt graph.DType) bool {
	switch dt {
	case graph.Float, graph.Double, graph.Int8, graph.Uint8, graph.Int16, graph.Uint16,
		graph.Int32, graph.Uint32, graph.Int64, graph.Uint64, graph.Bool:
		return true
	}
	return false
}

func toValue(t *Tensor) (ortgo.Value, error) {
	want, err := graph.ByteSize(t.DType, graph.ShapeOf(t.Shape...))
	if err != nil || want < 0 {
		return nil, fmt.Errorf("unsupported tensor type %s", t.DType)
	}
	if int64(len(t.Data)) != want {
		return nil, fmt.Errorf("%d bytes for shape %v of %s (need %d)", len(t.Data), t.Shape, t.DType, want)
	}
	if len(t.Shape) == 0 {
		return scalarValue(t)
	}
	return customValue(t.Shape, append([]byte(nil), t.Data...), t.DType)
}

// customValue makes an ONNX Runtime tensor over data. A tensor with no elements (a 0 in its
// shape: a decoder's past keys at prefill) gets a one-byte buffer: the binding refuses an
// empty one, and ONNX Runtime reads and writes none of it (it only checks that the buffer
// is large enough for the shape). fromValue gives such a tensor back with no data.
func customValue(shape []int64, data []byte, dt graph.DType) (ortgo.Value, error) {
	if len(data) == 0 {
		data = make([]byte, 1)
	}
	return ortgo.NewCustomDataTensor(ortgo.NewShape(shape...), data, ortgo.TensorElementDataType(dt))
}

func scalarValue(t *Tensor) (ortgo.Value, error) {
	switch t.DType {
	case graph.Float:
		return ortgo.NewScalar(*(*float32)(unsafe.Pointer(&t.Data[0])))
	case graph.Double:
		return ortgo.NewScalar(*(*float64)(unsafe.Pointer(&t.Data[0])))
	case graph.Int64:
		return ortgo.NewScalar(*(*int64)(unsafe.Pointer(&t.Data[0])))
	case graph.Uint64:
		return ortgo.NewScalar(*(*uint64)(unsafe.Pointer(&t.Data[0])))
	case graph.Int32:
		return ortgo.NewScalar(*(*int32)(unsafe.Pointer(&t.Data[0])))
	case graph.Uint32:
		return ortgo.NewScalar(*(*uint32)(unsafe.Pointer(&t.Data[0])))
	case graph.Int16:
		return ortgo.NewScalar(*(*int16)(unsafe.Pointer(&t.Data[0])))
	case graph.Uint16:
		return ortgo.NewScalar(*(*uint16)(unsafe.Pointer(&t.Data[0])))
	case graph.Int8:
		return ortgo.NewScalar(int8(t.Data[0]))
	case graph.Uint8:
		return ortgo.NewScalar(t.Data[0])
	case graph.Bool:
		return ortgo.NewScalar(t.Data[0] != 0)
	}
	return nil, fmt.Errorf("scalars of type %s are not supported", t.DType)
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))...)
}

func fromValue(v ortgo.Value) (*Tensor, error) {
	shape := []int64(v.GetShape())
	t := &Tensor{Shape: append([]int64{}, shape...)}
	switch x := v.(type) {
	case *ortgo.CustomDataTensor:
		t.DType = graph.DType(x.DataType())
		data := x.GetData()
		// The buffer may be longer than the shape needs (customValue's byte for a tensor
		// with no elements).
		if n, err := graph.ByteSize(t.DType, graph.ShapeOf(shape...)); err == nil && n >= 0 && n < int64(len(data)) {
			data = data[:n]
		}
		t.Data = append([]byte{}, data...)
	case *ortgo.Tensor[float32]:
		t.DType, t.Data = graph.Float, bytesOf(x.GetData())
	case *ortgo.Tensor[float64]:
		t.DType, t.Data = graph.Double, bytesOf(x.GetData())
	case *ortgo.Tensor[int64]:
		t.DType, t.Data = graph.Int64, bytesOf(x.GetData())
	case *ortgo.Tensor[uint64]:
		t.DType, t.Data = graph.Uint64, bytesOf(x.GetData())
	case *ortgo.Tensor[int32]:
		t.DType, t.Data = graph.Int32, bytesOf(x.GetData())
	case *ortgo.Tensor[uint32]:
		t.DType, t.Data = graph.Uint32, bytesOf(x.GetData())
	case *ortgo.Tensor[int16]:
		t.DType, t.Data = graph.Int16, bytesOf(x.GetData())
	case *ortgo.Tensor[uint16]:
		t.DType, t.Data = graph.Uint16, bytesOf(x.GetData())
	case *ortgo.Tensor[int8]:
		t.DType, t.Data = graph.Int8, bytesOf(x.GetData())
	case *ortgo.Tensor[uint8]:
		t.DType, t.Data = graph.Uint8, bytesOf(x.GetData())
	case *ortgo.Tensor[bool]:
		t.DType, t.Data = graph.Bool, bytesOf(x.GetData())
	case *ortgo.Scalar[float32]:
		t.DType, t.Data = graph.Float, bytesOf([]float32{x.GetData()})
	case *ortgo.Scalar[float64]:
		t.DType, t.Data = graph.Double, bytesOf([]float64{x.GetData()})
	case *ortgo.Scalar[int64]:
		t.DType, t.Data = graph.Int64, bytesOf([]int64{x.GetData()})
	case *ortgo.Scalar[uint64]:
		t.DType, t.Data = graph.Uint64, bytesOf([]uint64{x.GetData()})
	case *ortgo.Scalar[int32]:
		t.DType, t.Data = graph.Int32, bytesOf([]int32{x.GetData()})
	case *ortgo.Scalar[uint32]:
		t.DType, t.Data = graph.Uint32, bytesOf([]uint32{x.GetData()})
	case *ortgo.Scalar[int16]:
		t.DType, t.Data = graph.Int16, bytesOf([]int16{x.GetData()})
	case *ortgo.Scalar[uint16]:
		t.DType, t.Data = graph.Uint16, bytesOf([]uint16{x.GetData()})
	case *ortgo.Scalar[int8]:
		t.DType, t.Data = graph.Int8, bytesOf([]int8{x.GetData()})
	case *ortgo.Scalar[uint8]:
		t.DType, t.Data = graph.Uint8, []byte{x.GetData()}
	case *ortgo.Scalar[bool]:
		t.DType, t.Data = graph.Bool, bytesOf([]bool{x.GetData()})
	default:
		return nil, fmt.Errorf("unsupported output value %T", v)
	}
	return t, nil
}

// IOInfo describes a model input or output as ONNX Runtime sees it.
type IOInfo struct {
	Name  string
	DType graph.DType
	Shape []int64 // -1 for dynamic dimensions
}

// ModelIO returns the inputs and outputs of a model.
func ModelIO(modelPath string) (inputs, outputs []IOInfo, err error) {
	if err := Init(); err != nil {
		return nil, nil, err
	}
	ins, outs, err := ortgo.GetInputOutputInfo(modelPath)
	if err != nil {
		return nil, nil, err
	}
	conv := func(l []ortgo.InputOutputInfo) []IOInfo {
		r := make([]IOInfo, len(l))
		for i, x := range l {
			r[i] = IOInfo{Name: x.Name, DType: graph.DType(x.DataType), Shape: append([]int64{}, x.Dimensions...)}
		}
		return r
	}
	return conv(ins), conv(outs), nil
}

// Bound is a call of a session prepared once and run repeatedly on the same buffers (see
// Session.Prepare): its inputs are ONNX Runtime values over the caller's feed data, made
// once, and every output whose shape is known is written in place into a buffer allocated
// once. A Run then copies no tensor data and allocates nothing in Go (when every output is
// preallocated), so its time is the runtime's alone, not the Go heap's.
type Bound struct {
	s       *Session
	ins     []ortgo.Value
	outs    []ortgo.Value // preallocated outputs; nil where the shape is unknown
	scratch []ortgo.Value // outs, with the runtime's values for the unknown ones after a Run
	tensors []*Tensor     // preallocated outputs as tensors over their buffers (nil: not one)
	binding *ortgo.IoBinding
}

// Prepare binds feeds (by input name) and output buffers to a call of s, for Bound.Run. The
// inputs are not copied: the runtime reads the feeds' Data in place, on every Run, so the
// caller must keep it alive and may change its contents between runs (not its length). Every
// output with a known shape in hints is preallocated and written in place; the others are
// allocated by the runtime on each Run. hints must give the shape of outputs that are scalars
// or have non-native element types (see Run). Close releases the call (not the session).
func (s *Session) Prepare(feeds map[string]*Tensor, hints map[string]OutputHint) (*Bound, error) {
	b := &Bound{s: s, ins: make([]ortgo.Value, len(s.inputs)), outs: make([]ortgo.Value, len(s.outputs)),
		scratch: make([]ortgo.Value, len(s.outputs)), tensors: make([]*Tensor, len(s.outputs))}
	for i, name := range s.inputs {
		t, ok := feeds[name]
		if !ok {
			b.Close()
			return nil, fmt.Errorf("no value for input %q", name)
		}
		v, err := viewValue(t)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		b.ins[i] = v
	}
	all := true
	for i, name := range s.outputs {
		h, ok := hints[name]
		if !ok || h.Shape == nil {
			if ok && !native(h.DType) {
				b.Close()
				return nil, fmt.Errorf("output %q of type %s needs a known shape to be read", name, h.DType)
			}
			all = false
			continue
		}
		t := zeroTensor(h)
		v, err := viewValue(t)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		b.outs[i] = v
		if len(t.Shape) > 0 {
			b.tensors[i] = t
		}
	}
	if all {
		bd, err := s.s.CreateIoBinding()
		if err != nil {
			b.Close()
			return nil, err
		}
		b.binding = bd
		for i, name := range s.inputs {
			if err := bd.BindInput(name, b.ins[i]); err != nil {
				b.Close()
				return nil, fmt.Errorf("binding input %q: %w", name, err)
			}
		}
		for i, name := range s.outputs {
			if err := bd.BindOutput(name, b.outs[i]); err != nil {
				b.Close()
				return nil, fmt.Errorf("binding output %q: %w", name, err)
			}
		}
	}
	return b, nil
}

// viewValue makes an ONNX Runtime value over t's data, without copying it (scalars are
// copied: the binding has no scalar over caller memory).
func viewValue(t *Tensor) (ortgo.Value, error) {
	want, err := graph.ByteSize(t.DType, graph.ShapeOf(t.Shape...))
	if err != nil || want < 0 {
		return nil, fmt.Errorf("unsupported tensor type %s", t.DType)
	}
	if int64(len(t.Data)) != want {
		return nil, fmt.Errorf("%d bytes for shape %v of %s (need %d)", len(t.Data), t.Shape, t.DType, want)
	}
	if len(t.Shape) == 0 {
		return scalarValue(t)
	}
	return customValue(t.Shape, t.Data, t.DType)
}

// Run calls the session on the bound inputs, writing the preallocated outputs in place.
func (b *Bound) Run() error {
	if b.s.s == nil {
		return errors.New("run of a prepared call on a closed session")
	}
	if b.binding != nil {
		if err := b.s.s.RunWithBinding(b.binding); err != nil {
			return fmt.Errorf("error running network: %w", err)
		}
		return nil
	}
	b.release()
	copy(b.scratch, b.outs)
	return b.s.s.Run(b.ins, b.scratch)
}

// release destroys the values the runtime allocated for outputs of unknown shape in the
// last Run.
func (b *Bound) release() {
	for i, v := range b.scratch {
		if v != nil && b.outs[i] == nil {
			v.Destroy()
		}
		b.scratch[i] = nil
	}
}

// Output returns an output of the last Run. A preallocated non-scalar output is returned
// over its buffer, not copied: its Data changes with the next Run and must not be used after
// Close. Other outputs are copied.
func (b *Bound) Output(name string) (*Tensor, error) {
	for i, n := range b.s.outputs {
		if n != name {
			continue
		}
		if t := b.tensors[i]; t != nil {
			return t, nil
		}
		v := b.outs[i]
		if v == nil {
			v = b.scratch[i]
		}
		if v == nil {
			return nil, fmt.Errorf("output %q: not computed (no Run yet)", name)
		}
		t, err := fromValue(v)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("output %q is not an output of the session", name)
}

// Close releases the call's values and binding (the session stays open).
func (b *Bound) Close() error {
	if b.binding != nil {
		b.binding.Destroy()
		b.binding = nil
	}
	b.release()
	for _, l := range [][]ortgo.Value{b.ins, b.outs} {
		for i, v := range l {
			if v != nil {
				v.Destroy()
				l[i] = nil
			}
		}
	}
	return nil
}

// LoadedVersion is the version of the ONNX Runtime library this process loads (Init), ""
// when it cannot be loaded.
func LoadedVersion() string {
	if Init() != nil {
		return ""
	}
	return ortgo.GetVersion()
}
