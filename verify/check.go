package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// checkErr is the error for the structural problems found in an output directory: a
// *diag.Error of kind input about dir, whose message is the first problem with the count of
// the others ("DIR: PROBLEM (and N more problems)") and whose notes list every problem.
func checkErr(dir string, probs []string) *diag.Error {
	msg := probs[0]
	if len(probs) > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", len(probs)-1)
	}
	e := diag.Input("%s", msg).About(diag.File, dir)
	e.Notes = probs
	return e
}

// Check reads an output directory and checks, without running anything, that the stages
// form a valid pipeline: each stage file matches its manifest entry (hash, inputs, outputs
// and their types); inside a stage every node reads only stage inputs, weights, or outputs
// of earlier nodes (subgraph captures included), no name is defined twice, every input and
// weight is used and every output produced; every boundary tensor has an element type and
// a shape; external data stays inside the directory and within its file; across stages,
// every stage input is a model input or an output of an earlier stage, and every model
// output is produced by exactly the stage the manifest names. It returns the manifest.
func Check(dir string) (*emit.Manifest, error) {
	man, err := emit.ReadManifest(dir)
	if err != nil {
		return nil, diag.Wrap(diag.KindInput, err)
	}
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	if len(man.Stages) == 0 {
		add("the manifest lists no stages")
	}
	// available[name] = index of the stage producing it (-1: model input).
	available := map[string]int{}
	for _, in := range man.Model.Inputs {
		available[in.Name] = -1
	}
	outputBy := map[string]int{}
	for i, st := range man.Stages {
		if st.Index != i {
			add("stage %d is listed with index %d", i, st.Index)
		}
		for _, in := range st.Inputs {
			p, ok := available[in.Name]
			switch {
			case !ok:
				add("stage %d reads %q, which no earlier stage produces and is not a model input", i, in.Name)
			case p != in.Stage:
				add("stage %d reads %q from stage %d, but the manifest says stage %d", i, in.Name, p, in.Stage)
			}
		}
		for _, out := range st.Outputs {
			if out.Stage != i {
				add("stage %d output %q names producer stage %d", i, out.Name, out.Stage)
			}
			if p, ok := available[out.Name]; ok && p >= 0 && p != i {
				add("stages %d and %d both output %q", p, i, out.Name)
			}
			if _, isInput := available[out.Name]; !isInput || !isPassthrough(st, out.Name) {
				available[out.Name] = i
			}
			if out.ModelOutput {
				if _, dup := outputBy[out.Name]; dup {
					add("model output %q is output by several stages", out.Name)
				}
				outputBy[out.Name] = i
			}
			for _, c := range out.Consumers {
				if c <= i || c >= len(man.Stages) || !hasInput(man.Stages[c], out.Name) {
					add("stage %d says it sends %q to stage %d, which does not read it", i, out.Name, c)
				}
			}
		}
		probs = append(probs, checkStageFile(dir, i, &st)...)
	}
	for _, out := range man.Model.Outputs {
		s, ok := outputBy[out.Name]
		switch {
		case !ok:
			add("model output %q is output by no stage", out.Name)
		case s != out.Stage:
			add("model output %q comes from stage %d, but the manifest's model section says %d", out.Name, s, out.Stage)
		}
	}
	nTransfers := 0
	for _, st := range man.Stages {
		for _, out := range st.Outputs {
			nTransfers += len(out.Consumers)
		}
	}
	if nTransfers != len(man.Transfers) {
		add("the stages send %d tensors but the manifest lists %d transfers", nTransfers, len(man.Transfers))
	}
	if len(probs) > 0 {
		return man, checkErr(dir, probs)
	}
	return man, nil
}

func isPassthrough(st emit.Stage, name string) bool { return hasInput(st, name) }

func hasInput(st emit.Stage, name string) bool {
	for _, in := range st.Inputs {
		if in.Name == name {
			return true
		}
	}
	return false
}

// checkStageFile checks one stage model against its manifest entry.
func checkStageFile(dir string, i int, st *emit.Stage) []string {
	var probs []string
	add := func(format string, a ...any) {
		probs = append(probs, fmt.Sprintf("stage %d (%s): ", i, st.File)+fmt.Sprintf(format, a...))
	}
	if st.File == "" || filepath.Base(st.File) != st.File || strings.HasPrefix(st.File, ".") {
		add("bad file name")
		return probs
	}
	data, err := os.ReadFile(filepath.Join(dir, st.File))
	if err != nil {
		add("%v", err)
		return probs
	}
	if sum := sha256.Sum256(data); st.SHA256 != "" && hex.EncodeToString(sum[:]) != st.SHA256 {
		add("sha256 differs from the manifest's")
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		add("not a valid ONNX protobuf: %v", err)
		return probs
	}
	gr := mp.Graph
	if gr == nil {
		add("no graph")
		return probs
	}
	if mp.IrVersion == nil || len(mp.OpsetImport) == 0 {
		add("no ir_version or opset_import")
	}
	defined := map[string]string{} // name → what defines it
	define := func(name, what string) {
		if name == "" {
			return
		}
		if prev, ok := defined[name]; ok && !(prev == "input" && what == "weight") {
			add("%q is defined twice (%s and %s)", name, prev, what)
		}
		defined[name] = what
	}
	weights := map[string]bool{}
	for _, t := range gr.Initializer {
		weights[t.GetName()] = true
	}
	for _, t := range gr.SparseInitializer {
		weights[t.GetValues().GetName()] = true
	}
	var inputs []string
	for _, vi := range gr.Input {
		if weights[vi.GetName()] { // IR < 4 lists weights among inputs
			continue
		}
		inputs = append(inputs, vi.GetName())
		define(vi.GetName(), "input")
		if p := typeProblem(vi); p != "" {
			add("input %q: %s", vi.GetName(), p)
		}
	}
	for _, t := range gr.Initializer {
		define(t.GetName(), "weight")
		if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			if p := externalProblem(dir, st, t); p != "" {
				add("weight %q: %s", t.GetName(), p)
			}
		}
	}
	for _, t := range gr.SparseInitializer {
		define(t.GetValues().GetName(), "weight")
	}
	used := map[string]bool{}
	for j, n := range gr.Node {
		reads := append([]string{}, n.Input...)
		for _, a := range n.Attribute {
			if a.G != nil {
				reads = append(reads, ingest.FreeNames(a.G)...)
			}
			for _, sg := range a.Graphs {
				reads = append(reads, ingest.FreeNames(sg)...)
			}
		}
		for _, r := range reads {
			if r == "" {
				continue
			}
			used[r] = true
			if _, ok := defined[r]; !ok {
				add("node %d (%s %q) reads %q, which is neither a stage input, a weight, nor an output of an earlier node", j, n.GetOpType(), n.GetName(), r)
			}
		}
		for _, o := range n.Output {
			define(o, "node "+strconv.Quote(n.GetName()))
		}
	}
	for _, in := range inputs {
		if !used[in] && !isOutputName(gr, in) {
			add("input %q is not used", in)
		}
	}
	for name := range weights {
		if !used[name] && !isOutputName(gr, name) {
			add("weight %q is not used", name)
		}
	}
	var outputs []string
	for _, vi := range gr.Output {
		outputs = append(outputs, vi.GetName())
		if _, ok := defined[vi.GetName()]; !ok {
			add("output %q is not produced", vi.GetName())
		}
		if p := typeProblem(vi); p != "" {
			add("output %q: %s", vi.GetName(), p)
		}
	}
	// The file's boundary must be the manifest's.
	probs = append(probs, compareBoundary(i, st, "inputs", inputs, st.Inputs, gr.Input)...)
	probs = append(probs, compareBoundary(i, st, "outputs", outputs, st.Outputs, gr.Output)...)
	if st.DataFile != "" {
		if filepath.Base(st.DataFile) != st.DataFile || strings.HasPrefix(st.DataFile, ".") {
			add("bad data file name %q", st.DataFile)
		} else if sum, err := fileSHA256(filepath.Join(dir, st.DataFile)); err != nil {
			add("data file: %v", err)
		} else if st.DataSHA256 != "" && sum != st.DataSHA256 {
			add("data file %s: sha256 differs from the manifest's", st.DataFile)
		}
	}
	return probs
}

// fileSHA256 hashes a regular file as it reads it: a stage's data file can hold many GiB.
func fileSHA256(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func isOutputName(gr *onnxpb.GraphProto, name string) bool {
	for _, vi := range gr.Output {
		if vi.GetName() == name {
			return true
		}
	}
	return false
}

func compareBoundary(i int, st *emit.Stage, what string, names []string, refs []emit.TensorRef, vis []*onnxpb.ValueInfoProto) []string {
	var probs []string
	if len(names) != len(refs) {
		return []string{fmt.Sprintf("stage %d (%s): the file has %d %s, the manifest %d", i, st.File, len(names), what, len(refs))}
	}
	byName := map[string]*onnxpb.ValueInfoProto{}
	for _, vi := range vis {
		byName[vi.GetName()] = vi
	}
	for j := range names {
		if names[j] != refs[j].Name {
			probs = append(probs, fmt.Sprintf("stage %d (%s): %s %d is %q in the file, %q in the manifest", i, st.File, what, j, names[j], refs[j].Name))
			continue
		}
		if tt := byName[names[j]].GetType().GetTensorType(); tt != nil {
			if dt := graph.DType(tt.GetElemType()).String(); dt != refs[j].DType {
				probs = append(probs, fmt.Sprintf("stage %d (%s): %q is %s in the file, %s in the manifest", i, st.File, names[j], dt, refs[j].DType))
			}
		}
	}
	return probs
}

// typeProblem says what is missing from a boundary value's type, or "".
func typeProblem(vi *onnxpb.ValueInfoProto) string {
	t := vi.GetType()
	if t == nil || t.GetValue() == nil {
		return "no type"
	}
	tt := t.GetTensorType()
	if tt == nil {
		return "" // sequences, maps, optionals: typed by the source's declaration
	}
	if tt.GetElemType() == 0 {
		return "no element type"
	}
	if tt.Shape == nil {
		return "no shape"
	}
	return ""
}

// externalProblem checks an external-data reference against the stage's data file.
func externalProblem(dir string, st *emit.Stage, t *onnxpb.TensorProto) string {
	var loc string
	var off, length int64 = 0, -1
	for _, kv := range t.ExternalData {
		switch kv.GetKey() {
		case "location":
			loc = kv.GetValue()
		case "offset":
			off, _ = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, _ = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
	}
	if loc == "" || filepath.IsAbs(loc) || strings.Contains(loc, "..") || filepath.Base(loc) != loc {
		return fmt.Sprintf("external location %q is not a file name inside the directory", loc)
	}
	if loc != st.DataFile {
		return fmt.Sprintf("external location %q is not the stage's data file %q", loc, st.DataFile)
	}
	fi, err := os.Stat(filepath.Join(dir, loc))
	if err != nil {
		return err.Error()
	}
	want, err := graph.ByteSize(graph.DType(t.GetDataType()), graph.ShapeOf(t.Dims...))
	if err != nil || want < 0 || length != want {
		return fmt.Sprintf("external length %d, want %d", length, want)
	}
	if off < 0 || off+length > fi.Size() {
		return fmt.Sprintf("bytes %d..%d lie outside %s (%d bytes)", off, off+length, loc, fi.Size())
	}
	return ""
}
