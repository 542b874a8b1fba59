// Package ingest reads an ONNX model into onnxpart's graph.
//
// What goes in: a path to an .onnx file (with its external-data files beside it) and Options
// (symbolic dimension bindings such as batch=4, resource limits). What comes out: a *Model
// holding the decoded protobuf (kept for emit, never modified and never written back) and a
// validated graph.Graph in which every tensor has a dtype, a shape (inferred by onnxpart's own
// shape inference with constant folding of shape computations) and a byte size, and every
// node its FLOPs, bytes read and written, and parameter bytes. Model.Summarize gives the
// object `onnxpart inspect --json` prints (JSON Schema: emit/schema's inspect.v1). An input
// dim the model ties to others (a decoder's attention mask length, total = past + seq) is
// derived when they are bound (Model.DerivedDims), and bound sizes that contradict such a tie
// are one usage error naming the dim and both sizes (derive.go).
//
//	m, err := ingest.Load("model.onnx", ingest.Options{Dims: map[string]int64{"batch": 8}})
//	// m.Graph goes to profile (costs), fusion (coarsening) and emit (stage files).
//
// Errors a user can cause (missing file, not ONNX, truncated protobuf, a cycle, a tensor
// produced twice, a dangling name, a bad external-data reference, an overflowing shape) come
// back as a *diag.Error of kind input about the model file ("PATH: MSG", the message naming the
// culprit); `--dim` and `--input-shape` bindings that name no input dimension come back as a
// *diag.Error of kind usage (see ParseDims, ParseInputShapes).
package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// Options control loading.
type Options struct {
	// Dims binds symbolic dimensions (dim_param) to sizes, e.g. {"batch": 4}. Naming a
	// dimension the model does not have is a usage error.
	Dims map[string]int64
	// InputShapes binds whole input shapes by input name, unnamed dimensions included (the
	// --input-shape NAME=1x3x224x224 convention of trtexec and Polygraphy); the dim_params it
	// covers are bound as by Dims. Naming no input, a wrong rank or a size contradicting a
	// fixed dimension or Dims is a usage error.
	InputShapes map[string][]int64
	// MaxFileBytes refuses larger model files (0: DefaultMaxFileBytes). External data files
	// are not read into memory and do not count.
	MaxFileBytes int64
	// MaxNodes refuses models whose main graph has more nodes (0: DefaultMaxNodes).
	MaxNodes int
	// DefaultDims are sizes for input dims that neither Dims nor InputShapes bind and that
	// no tie to bound dims settles (see Model.DerivedDims): a dim the model ties to others
	// (total = past + seq) is derived from them rather than given its default. Names the
	// model's inputs do not carry are ignored. Verify passes the sizes a plan was made at
	// this way.
	DefaultDims map[string]int64
	// Names are the caller's names of these options in errors ("Dims": "--dim"); without
	// them errors write the options as Go does (Options.Dims["batch"] = 4). The command
	// passes its flags.
	Names diag.Names
}

// DefaultMaxNodes bounds the nodes of a model's main graph. Loading takes about 4.6 KB and
// 90 µs per node (a 100,000-node chain: 9 s, 460 MB), so the ~16 million tiny nodes a 2 GiB
// file can hold would need some 70 GB; a million nodes stays near 5 GB.
const DefaultMaxNodes = 1_000_000

// DefaultMaxFileBytes is the largest .onnx file accepted by default: protobuf's own 2 GiB limit.
const DefaultMaxFileBytes = 2<<30 - 1

// Model is an ingested ONNX model.
type Model struct {
	// Path is the model file as given; Dir the directory external data is resolved against.
	Path string
	Dir  string
	// SHA256 of the model file (hex) and its size in bytes.
	SHA256   string
	FileSize int64
	// proto is the decoded model (node i of Graph is proto.Graph.Node[i]): Proto.
	proto *onnxpb.ModelProto
	Graph *graph.Graph
	// Unsupported lists op types (domain-qualified when not ONNX) that shape inference does not
	// know; their outputs take shapes from value_info when present.
	Unsupported []string
	// ExternalData is true when some initializer lives in an external file.
	ExternalData bool
	// SymbolicDims lists the dim_param names of the graph inputs still unbound, sorted
	// (dims that only outputs or value_info carry follow from these and are not listed).
	SymbolicDims []string
	// Warnings are non-fatal findings (e.g. a value_info shape contradicting inference).
	Warnings []string
	// ShapeErrors are the inference errors of the main graph (inputs whose sizes break a
	// node: shapes that do not broadcast, a window larger than its padded input), each naming
	// its node; they are among the Warnings too. RequireInputSizes reports them.
	ShapeErrors []string
	// Notes say how costs were estimated where the model does not settle them: the branch an
	// If is costed by, a Loop or Scan whose trip count is unknown (counted once), each of
	// kind diag.NoteApprox about its node.
	Notes []diag.Note
	// DerivedDims are the input dims this load bound because the model ties them to dims
	// that were bound, each with the expression it was derived as: a decoder's attention
	// mask length, total → "past + seq" (its size is in Dims; DerivedNotes writes both).
	DerivedDims map[string]string

	inits map[string]*onnxpb.TensorProto
	sub   *subgraphCosts
	dims  map[string]int64
	// derivedDims are sizes given for dims only outputs or value_info carry, checked after
	// inference (checkDerivedDims).
	derivedDims map[string]int64
	inputShapes map[string][]int64
	// inputParams are the dim_params the graph inputs carry; rels the ties between them,
	// when the load looked for them (derive.go).
	inputParams map[string]bool
	rels        []dimRelation
	// shapesOnly skips costs: the load of the model with its dims unbound that finds ties.
	shapesOnly bool
	names      diag.Names // Options.Names, for the errors of the bindings
}

// Dims returns the symbolic-dimension bindings the model was loaded with (a copy): those
// given, the derived ones (DerivedDims) and the defaults used.
func (m *Model) Dims() map[string]int64 {
	out := make(map[string]int64, len(m.dims))
	for k, v := range m.dims {
		out[k] = v
	}
	return out
}

// usagef is a problem with how ingest was asked to load the model: a *diag.Error of kind
// usage (exit code 2), formatted as by fmt.Errorf.
func usagef(format string, a ...any) *diag.Error { return diag.Usage(format, a...) }

// fileErr is a problem with the model file at path: a *diag.Error of kind input about the
// file ("PATH: MSG"), formatted as by fmt.Sprintf, whose cause is cause (nil: none).
func fileErr(path string, cause error, format string, a ...any) *diag.Error {
	return diag.Input(format, a...).About(diag.File, path).Wrap(cause)
}

// Load reads, validates and analyses the model at path.
func Load(path string, opt Options) (*Model, error) {
	fail := func(format string, a ...any) error { return fileErr(path, nil, format, a...) }
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fail("no such file")
	case err != nil:
		return nil, fileErr(path, err, "cannot read: %v", err)
	case fi.IsDir():
		return nil, fail("is a directory, not an ONNX model file")
	case fi.Size() == 0:
		return nil, fail("is empty, not an ONNX model")
	}
	limit := opt.MaxFileBytes
	if limit <= 0 {
		limit = DefaultMaxFileBytes
	}
	if fi.Size() > limit {
		return nil, fail("is %d bytes, over the %d-byte limit for a model file (protobuf cannot exceed 2 GiB; large weights belong in external data)", fi.Size(), limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileErr(path, err, "cannot read: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fileErr(path, err, "cannot read: %v", err)
	}
	return loadBytes(path, data, opt)
}

// loadBytes decodes and analyses model bytes; path locates external data.
func loadBytes(path string, data []byte, opt Options) (*Model, error) {
	// The checksum (for the manifest) is computed beside the protobuf decode.
	sumc := make(chan [sha256.Size]byte, 1)
	go func() { sumc <- sha256.Sum256(data) }()
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{RecursionLimit: maxNesting}).Unmarshal(data, &mp); err != nil {
		<-sumc
		if strings.Contains(err.Error(), "recursion") {
			return nil, fileErr(path, err, "protobuf nesting deeper than %d levels (subgraphs inside subgraphs); refusing the model", maxNesting)
		}
		if looksTruncated(err) || startsLikeONNX(data) {
			return nil, fileErr(path, err, "truncated or corrupt protobuf: %s", trimProtoErr(err))
		}
		return nil, fileErr(path, err, "not an ONNX model (protobuf decoding failed: %s)", trimProtoErr(err))
	}
	sum := <-sumc
	if err := checkModelShape(&mp); err != nil {
		return nil, fileErr(path, nil, "%v", err)
	}
	maxNodes := opt.MaxNodes
	if maxNodes <= 0 {
		maxNodes = DefaultMaxNodes
	}
	if n := len(mp.Graph.Node); n > maxNodes {
		return nil, fileErr(path, nil, "has %d nodes, over the limit of %d nodes", n, maxNodes)
	}
	m := &Model{
		Path:     path,
		Dir:      filepath.Dir(path),
		SHA256:   hex.EncodeToString(sum[:]),
		FileSize: int64(len(data)),
		proto:    &mp,
	}
	if err := m.analyse(opt); err != nil {
		return nil, err
	}
	return m, nil
}

// analyse binds the dims opt gives, derives the dims tied to them, and builds the graph
// with shapes, values and costs.
func (m *Model) analyse(opt Options) error {
	m.names = opt.Names
	if err := m.bindDims(opt.Dims, opt.InputShapes); err != nil {
		return err
	}
	m.deriveDims(opt.DefaultDims)
	if err := m.build(); err != nil {
		// A defect of the graph (a *diag.Error about a tensor or a node, or a cycle) is a
		// problem with the file: the file becomes the subject, the defect the cause.
		return fileErr(m.Path, err, "%v", err)
	}
	if err := m.checkTies(); err != nil {
		return err
	}
	return m.checkDerivedDims()
}

// Unbound returns the model as Load gives it with no dims bound and no input shapes: the
// same decoded file (shared, not read again), its shapes inferred once more with every input
// dim symbolic. Emit uses it to write stage files that keep the dims a plan was bound at.
// The nodes and tensors are those of m, in the same order.
func (m *Model) Unbound() (*Model, error) {
	u := &Model{Path: m.Path, Dir: m.Dir, SHA256: m.SHA256, FileSize: m.FileSize, proto: m.proto}
	if err := u.analyse(Options{}); err != nil {
		return nil, err
	}
	return u, nil
}

// maxNesting bounds protobuf message nesting (subgraphs inside subgraphs).
const maxNesting = 100

func looksTruncated(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unexpected EOF") || strings.Contains(s, "truncated")
}

// startsLikeONNX reports whether data begins with a ModelProto field: ir_version (field 1,
// varint), producer_name/version/domain/doc_string/graph (fields 2-4, 6, 7, length-delimited),
// model_version (5, varint) or opset_import (8, length-delimited). A file that starts like a
// model but fails to decode is truncated or corrupt rather than "not ONNX".
func startsLikeONNX(data []byte) bool {
	if len(data) < 2 {
		return false
	}
	switch data[0] {
	case 0x08, 0x12, 0x1a, 0x22, 0x28, 0x32, 0x3a, 0x42:
		return true
	}
	return false
}

func trimProtoErr(err error) string {
	s := strings.ReplaceAll(err.Error(), "\u00a0", " ")
	s = strings.TrimPrefix(s, "proto: ")
	s = strings.TrimPrefix(s, "cannot parse invalid wire-format data")
	if s == "" {
		return "invalid wire-format data"
	}
	return strings.TrimSpace(s)
}

// checkModelShape rejects protobufs that decode but are not ONNX models: ONNX models always
// carry an IR version and a graph, and every node has an op type.
func checkModelShape(m *onnxpb.ModelProto) error {
	if m.Graph == nil {
		if m.IrVersion == nil {
			return errors.New("not an ONNX model (no ir_version and no graph)")
		}
		return errors.New("ONNX model without a graph")
	}
	if m.IrVersion == nil {
		return errors.New("not an ONNX model (no ir_version)")
	}
	if v := m.GetIrVersion(); v < 3 || v > int64(onnxpb.Version_IR_VERSION)+5 {
		return fmt.Errorf("unsupported ONNX IR version %d", v)
	}
	if len(m.OpsetImport) == 0 {
		return errors.New("ONNX model without opset_import")
	}
	for i, n := range m.Graph.Node {
		if n.GetOpType() == "" {
			return fmt.Errorf("node %d (%q) has no op_type", i, n.GetName())
		}
	}
	return nil
}

func tensorDims(t *onnxpb.TypeProto) []*onnxpb.TensorShapeProto_Dimension {
	if t == nil {
		return nil
	}
	if tt := t.GetTensorType(); tt != nil {
		return tt.GetShape().GetDim()
	}
	if st := t.GetSparseTensorType(); st != nil {
		return st.GetShape().GetDim()
	}
	return nil
}
