// Package access gives onnxpart's own packages what the public API does not show: the
// protobuf of a loaded model and of its initializers, and proto-level helpers. Package
// ingest fills these hooks when it is initialised; they take the model as `any` because this
// package cannot import ingest (ingest imports it).
package access

import "github.com/onnxpart/onnxpart/internal/onnxpb"

var (
	// ModelProto returns the decoded protobuf of an *ingest.Model.
	ModelProto func(m any) *onnxpb.ModelProto
	// Initializer returns the initializer proto called name of an *ingest.Model, or nil.
	Initializer func(m any, name string) *onnxpb.TensorProto
	// TensorData returns the little-endian bytes of a tensor stored inline in a model.
	TensorData func(tp *onnxpb.TensorProto) ([]byte, error)
	// FreeNames returns the names a subgraph reads from enclosing scopes.
	FreeNames func(g *onnxpb.GraphProto) []string
)
