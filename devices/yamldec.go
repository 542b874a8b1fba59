package devices

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
	"gopkg.in/yaml.v3"
)

// specErr is a problem in a device spec file (or the built-in catalog): a *diag.Error of kind
// input about the file at line ("FILE:LINE: FIELD: MSG"; line 0: unknown), field being a path
// such as devices[2].peak.fp16 ("": none).
func specErr(file string, line int, field, format string, a ...any) *diag.Error {
	if field != "" {
		format = "%s: " + format
		a = append([]any{field}, a...)
	}
	return diag.Input(format, a...).About(diag.File, file).AtLine(line)
}

// dec walks a yaml.Node tree, keeping the first error with its position.
type dec struct {
	file string
	err  *diag.Error
}

func (d *dec) failf(n *yaml.Node, field, format string, a ...any) {
	if d.err != nil {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	d.err = specErr(d.file, line, field, format, a...)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// fields returns the keys of a mapping node; unknown and repeated keys are errors naming
// the key's line. The result keeps the key node too (for error positions).
func (d *dec) fields(n *yaml.Node, path string, allowed ...string) map[string][2]*yaml.Node {
	if d.err != nil || n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		d.failf(n, path, "aliases are not supported")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.failf(n, path, "want a mapping (key: value), got %s", kindName(n))
		return nil
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	out := map[string][2]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.failf(k, path, "keys must be plain names")
			return nil
		}
		if k.Value == "<<" {
			d.failf(k, join(path, k.Value), "merge keys are not supported")
			return nil
		}
		if len(allowed) > 0 && !ok[k.Value] {
			d.failf(k, join(path, k.Value), "unknown field (known: %s)", strings.Join(sorted(allowed), ", "))
			return nil
		}
		if _, dup := out[k.Value]; dup {
			d.failf(k, join(path, k.Value), "given twice")
			return nil
		}
		out[k.Value] = [2]*yaml.Node{k, v}
	}
	return out
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func (d *dec) scalar(n *yaml.Node, path string) (string, bool) {
	if d.err != nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.failf(n, path, "want a value, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *dec) str(n *yaml.Node, path string) string {
	s, _ := d.scalar(n, path)
	return s
}

func (d *dec) strList(n *yaml.Node, path string) []string {
	if d.err != nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value}
	}
	var out []string
	for i, e := range d.list(n, path) {
		out = append(out, d.str(e, fmt.Sprintf("%s[%d]", path, i)))
	}
	return out
}

func (d *dec) list(n *yaml.Node, path string) []*yaml.Node {
	if d.err != nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.failf(n, path, "want a list, got %s", kindName(n))
		return nil
	}
	return n.Content
}

func (d *dec) integer(n *yaml.Node, path string, lo, hi int) int {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		d.failf(n, path, "want a whole number from %d to %d, got %q", lo, hi, s)
		return 0
	}
	return v
}

func (d *dec) boolean(n *yaml.Node, path string) bool {
	s, ok := d.scalar(n, path)
	if !ok {
		return false
	}
	switch s {
	case "true", "yes", "on":
		return true
	case "false", "no", "off":
		return false
	}
	d.failf(n, path, "want true or false, got %q", s)
	return false
}

// quantity reads a number with an optional unit (see ParseQuantity).
func (d *dec) quantity(n *yaml.Node, path string, u profile.Unit) float64 {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0
	}
	v, err := profile.ParseQuantity(s, u)
	if err != nil {
		d.failf(n, path, "%v", err)
		return 0
	}
	return v
}

// positive reads a quantity that must be greater than zero.
func (d *dec) positive(n *yaml.Node, path string, u profile.Unit) float64 {
	v := d.quantity(n, path, u)
	if d.err == nil && v <= 0 {
		d.failf(n, path, "must be greater than zero")
	}
	return v
}
