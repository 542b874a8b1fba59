package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// ReferenceCache keeps the original model's ONNX Runtime sessions and outputs so that
// verifying several splits of one model loads and runs it once per input set.
type ReferenceCache struct {
	sessions map[string]*ort.Session
	outputs  map[string]map[string]*ort.Tensor
}

// NewReferenceCache makes an empty cache; Close releases its sessions.
func NewReferenceCache() *ReferenceCache {
	return &ReferenceCache{sessions: map[string]*ort.Session{}, outputs: map[string]map[string]*ort.Tensor{}}
}

// Close releases the cached sessions.
func (c *ReferenceCache) Close() {
	for _, s := range c.sessions {
		s.Close()
	}
	c.sessions = map[string]*ort.Session{}
	c.outputs = map[string]map[string]*ort.Tensor{}
}

// reference returns the outputs of a reference session (under key in the cache) for every
// run's feeds, opening it with open when the cache lacks them. A cache Run made itself
// keeps neither the session nor the outputs past this size: only the caller's cache
// (Options.Reference) spans calls.
func (v *verifier) reference(ctx context.Context, key string, feeds []map[string]*ort.Tensor, inNames []string, hints map[string]ort.OutputHint, open func() (*ort.Session, error)) ([]map[string]*ort.Tensor, error) {
	c := v.ref
	out := make([]map[string]*ort.Tensor, len(feeds))
	for run, f := range feeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := c.sessions[key]
		if s == nil {
			var err error
			if s, err = open(); err != nil {
				return nil, err
			}
			c.sessions[key] = s
		}
		res, err := c.run(key, s, f, inNames, hints)
		if err != nil {
			return nil, fmt.Errorf("original model: %w", err)
		}
		out[run] = res
	}
	if v.ownRef {
		if s := c.sessions[key]; s != nil {
			s.Close()
			delete(c.sessions, key)
		}
		c.outputs = map[string]map[string]*ort.Tensor{}
	}
	return out, nil
}

// run runs the original model, reusing an earlier result for identical inputs.
func (c *ReferenceCache) run(key string, s *ort.Session, feeds map[string]*ort.Tensor, inNames []string, hints map[string]ort.OutputHint) (map[string]*ort.Tensor, error) {
	h := sha256.New()
	io.WriteString(h, key)
	for _, n := range inNames {
		t := feeds[n]
		if t == nil {
			continue
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00%v\x00", n, t.DType, t.Shape)
		h.Write(t.Data)
	}
	k := hex.EncodeToString(h.Sum(nil))
	if out, ok := c.outputs[k]; ok {
		return out, nil
	}
	out, err := s.Run(feeds, hints)
	if err != nil {
		return nil, err
	}
	c.outputs[k] = out
	return out, nil
}

// halfBoundaries lists the float16 tensors sent between stages, sorted.
func halfBoundaries(g *graph.Graph, man *emit.Manifest) []string {
	seen := map[string]bool{}
	var out []string
	for _, tr := range man.Transfers {
		id, ok := g.TensorByName(tr.Tensor)
		if ok && g.Tensors[id].DType == graph.Float16 && !seen[tr.Tensor] {
			seen[tr.Tensor] = true
			out = append(out, tr.Tensor)
		}
	}
	sort.Strings(out)
	return out
}

// roundedReference loads the original model changed only so that ONNX Runtime rounds each
// given float16 tensor to float16 where it crosses a stage boundary, as the chain must: an
// Identity node copies the tensor to a new graph output (ONNX Runtime keeps graph outputs
// in float16), and the nodes of later stages read the copy. ONNX semantics are unchanged.
func roundedReference(m *ingest.Model, man *emit.Manifest, rounded []string, inNames, outNames []string, sopt ort.Options) (*ort.Session, error) {
	g := m.Graph
	mp := proto.Clone(m.Proto()).(*onnxpb.ModelProto)
	pg := mp.Graph
	stageOf := map[string]int{} // node label → its only stage (absent when duplicated)
	for i, st := range man.Stages {
		dup := map[string]bool{}
		for _, n := range st.DuplicatedNodes {
			dup[n] = true
		}
		for _, n := range st.Nodes {
			if !dup[n] {
				stageOf[n] = i
			}
		}
	}
	from := map[string]int{}
	for _, tr := range man.Transfers {
		from[tr.Tensor] = tr.From
	}
	after := map[int][]*onnxpb.NodeProto{} // producer node → Identity nodes to insert after it
	for _, name := range rounded {
		id, _ := g.TensorByName(name)
		copyName := uniqueName(g, name+"_onnxpart_rounded")
		for v := range g.Nodes {
			if s, ok := stageOf[g.Nodes[v].Label()]; !ok || s <= from[name] {
				continue
			}
			n := pg.Node[v]
			for j, in := range n.Input {
				if in == name {
					n.Input[j] = copyName
				}
			}
		}
		p := g.Tensors[id].Producer
		after[p] = append(after[p], &onnxpb.NodeProto{Name: proto.String(copyName), OpType: proto.String(optype.Identity),
			Input: []string{name}, Output: []string{copyName}})
		pg.Output = append(pg.Output, &onnxpb.ValueInfoProto{Name: proto.String(copyName),
			Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float16))}}}})
	}
	nodes := make([]*onnxpb.NodeProto, 0, len(pg.Node)+len(rounded))
	for v, n := range pg.Node {
		nodes = append(nodes, n)
		nodes = append(nodes, after[v]...)
	}
	pg.Node = nodes
	dir, err := os.MkdirTemp("", "onnxpart-reference-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // a loaded session no longer needs its files
	// External data must sit beside the model for ONNX Runtime: link (or copy) it.
	for _, tp := range pg.Initializer {
		ref, err := m.ExternalRef(tp.GetName())
		if err != nil {
			return nil, err
		}
		if ref == nil {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(ref.Rel))
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Link(ref.Path, dst); err != nil {
			if err := copyFile(ref.Path, dst); err != nil {
				return nil, err
			}
		}
	}
	data, err := proto.Marshal(mp)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "reference.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	return ort.NewSession(path, inNames, outNames, sopt)
}

func uniqueName(g *graph.Graph, name string) string {
	for i := 0; ; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s_%d", name, i)
		}
		if _, taken := g.TensorByName(n); !taken {
			return n
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
