package onnxpb

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
)

// corpusModels lists every .onnx file under the shared model corpus.
func corpusModels(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..", "..", "shared", "models")
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(p) == ".onnx" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Skipf("model corpus not found: %v", err)
	}
	if len(files) == 0 {
		t.Fatal("no models in the corpus")
	}
	return files
}

// TestRoundTripByteIdentical checks that parse → serialize reproduces every corpus file
// byte for byte, so the schema matches the exporters' field layout (packing, order).
func TestRoundTripByteIdentical(t *testing.T) {
	for _, path := range corpusModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var m ModelProto
			if err := proto.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.ProtoReflect().GetUnknown()) != 0 {
				t.Errorf("unknown top-level fields: the schema is missing something")
			}
			out, err := proto.Marshal(&m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, out) {
				i := 0
				for i < len(raw) && i < len(out) && raw[i] == out[i] {
					i++
				}
				t.Fatalf("round trip differs at byte %d (sizes %d vs %d)", i, len(raw), len(out))
			}
		})
	}
}
