// Package schema holds the JSON Schemas (draft 2020-12) of onnxpart's machine-readable
// outputs, for programs in other languages that read them and for tests that keep the
// outputs and their descriptions in step.
//
// What goes in: a schema name and a JSON document. What comes out: the schema text (Get),
// or nil when the document satisfies it (Validate) and an error naming each failing
// location otherwise. The schemas are the files of this directory, embedded in the binary:
//
//	manifest.v1  manifest.json written with the stage files (format onnxpart.manifest/v1; emit.Manifest)
//	inspect.v1   onnxpart inspect --json (ingest.Summary, fusion.Summary under "fusion")
//	profile.v1   onnxpart profile --json (devices, figures with sources, links, per-class times)
//	verify.v1    onnxpart verify --json (verify.Report)
//	bench.v1     onnxpart bench --json (pipebench.Report)
//	plan.v1      onnxpart MODEL --json and onnxpart plan --json (a model form and an instance form; provisional)
//	costs.v1     cost files: onnxpart profile --costs measured -o FILE, read by --costs FILE (format onnxpart.costs/v1; package costs)
//	genai_config.v1  genai_config.json written by --emit genai (onnxruntime-genai's format, the part onnxpart writes; genai.Config)
//
// Versioning: a name ends in its major version, as the manifest's format string does
// ("onnxpart.manifest/v1" is manifest.v1). Within a version fields are only added, never
// renamed, removed or given another type, so the published files accept documents with
// fields they do not declare and readers should ignore fields they do not know. A breaking
// change gets a new file (manifest.v2) beside the old one. ValidateStrict additionally
// rejects undeclared fields; onnxpart's own tests use it so that every field an output
// gains is described here in the same change.
//
// Conventions shared by every output: snake_case names; a tensor is {name, dtype, shape,
// bytes, ...} with dtype the lower-case element type ("float32"), shape an array of sizes
// and symbolic dimension names (null when the rank is unknown) and bytes -1 when the size
// is not known; sizes are in bytes, times in seconds.
//
// The package stays under emit although it describes the outputs of verify, pipebench and
// the command as well: its files are published at emit/schema/NAME.json, the path the docs
// and other programs cite, and the manifest it was made for is emit's.
package schema

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed *.v1.json
var files embed.FS

// Names lists the schemas, sorted ("inspect.v1", "manifest.v1", …).
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Get returns the text of the schema called name (see Names), as stored in
// emit/schema/NAME.json.
func Get(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".json")
	if err != nil {
		return nil, fmt.Errorf("no schema %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Validate checks doc, one JSON value, against the schema called name. The error, when the
// document does not satisfy the schema, lists each failing location (JSON pointer) with the
// reason, e.g. "at '/stages/0': missing property 'sha256'".
func Validate(name string, doc []byte) error { return validate(name, doc, false) }

// ValidateStrict is Validate that also rejects object fields the schema does not declare
// (as if every object schema said "additionalProperties": false), so that a renamed or new
// field of an output is caught even where it is optional.
func ValidateStrict(name string, doc []byte) error { return validate(name, doc, true) }

func validate(name string, doc []byte, strict bool) error {
	sch, err := compiled(name, strict)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%s: the document is not one JSON value: %v", name, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

var (
	mu    sync.Mutex
	cache = map[string]*jsonschema.Schema{}
)

// compiled compiles a schema once per mode.
func compiled(name string, strict bool) (*jsonschema.Schema, error) {
	key := fmt.Sprint(name, strict)
	mu.Lock()
	defer mu.Unlock()
	if s := cache[key]; s != nil {
		return s, nil
	}
	text, err := Get(name)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %v", name, err)
	}
	if strict {
		closeObjects(doc)
	}
	id, _ := doc.(map[string]any)["$id"].(string)
	if id == "" {
		return nil, fmt.Errorf("schema %s has no $id", name)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(id, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %v", name, err)
	}
	s, err := c.Compile(id)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %v", name, err)
	}
	cache[key] = s
	return s, nil
}

// closeObjects sets "additionalProperties": false on every object schema that declares
// properties and says nothing about others. Subschemas without "type": "object" (the
// conditions of if/then, for instance) are left open, so that they keep their meaning.
func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if isObjectType(v["type"]) && (v["properties"] != nil || v["patternProperties"] != nil) {
			_, add := v["additionalProperties"]
			_, uneval := v["unevaluatedProperties"]
			if !add && !uneval {
				v["additionalProperties"] = false
			}
		}
		for _, x := range v {
			closeObjects(x)
		}
	case []any:
		for _, x := range v {
			closeObjects(x)
		}
	}
}

func isObjectType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return false
}
