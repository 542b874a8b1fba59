package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
)

func TestParseDims(t *testing.T) {
	got, err := parseDims([]string{"a=1,b=2", "c=3", "a=1"})
	if err != nil || fmt.Sprint(got) != "map[a:1 b:2 c:3]" {
		t.Fatalf("ParseDims: %v, %v", got, err)
	}
	for _, bad := range []string{"a", "a=x", "=3", "a=1,", "a=-1", "a=1.5"} {
		if _, err := parseDims([]string{bad}); diag.KindOf(err) != diag.KindUsage {
			t.Errorf("parseDims(%q): %v, want a usage error", bad, err)
		}
	}
	if _, err := parseDims([]string{"a=1", "a=2"}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a dim given twice with two sizes: %v", err)
	}
}

func TestParseInputShapes(t *testing.T) {
	got, err := parseInputShapes([]string{"input=1x3x224x224", "state=[2,1,128]", "len=", "a=b=4X5"})
	if err != nil || fmt.Sprint(got) != "map[a=b:[4 5] input:[1 3 224 224] len:[] state:[2 1 128]]" {
		t.Fatalf("ParseInputShapes: %v, %v", got, err)
	}
	for _, bad := range [][]string{{"input"}, {"=1x2"}, {"x=1xa"}, {"x=1x-2"}, {"x=1", "x=2"}} {
		if _, err := parseInputShapes(bad); diag.KindOf(err) != diag.KindUsage {
			t.Errorf("parseInputShapes(%q): %v, want a usage error", bad, err)
		}
	}
}
