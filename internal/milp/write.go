package milp

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/lanl/highs"
	"github.com/onnxpart/onnxpart/diag"
)

// WriteMPS writes the model to path for debugging, as free MPS (HiGHS's LP format when path
// ends in ".lp"). Columns carry Names, made unique and free of spaces; rows get HiGHS's default
// names. The file can be solved with the `highs` command-line solver.
func (m *Model) WriteMPS(path string) error {
	var opt Options
	if err := m.validate(opt); err != nil {
		return err
	}
	in, err := newInstance()
	if err != nil {
		return err
	}
	defer in.free()
	if err := m.load(in, opt, m.isMIP(opt)); err != nil {
		return err
	}
	if len(m.Names) > 0 {
		for j, name := range uniqueNames(m.Names) {
			if in.passColName(j, name).failed() {
				return diag.Internal("milp: HiGHS rejected column name %q", name)
			}
		}
	}
	err = in.raw.WriteModelToFile(path)
	var cs highs.CallStatus
	if errors.As(err, &cs) && cs.IsWarning() {
		err = nil // e.g. "writing default names"
	}
	if err != nil {
		return diag.Input("milp: writing %s: %v", path, err).About(diag.File, path).Wrap(err)
	}
	return nil
}

// uniqueNames makes names usable in MPS: no white space, none empty, no two alike.
func uniqueNames(names []string) []string {
	out := make([]string, len(names))
	seen := make(map[string]bool, len(names))
	for j, name := range names {
		name = strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return '_'
			}
			return r
		}, name)
		if name == "" {
			name = fmt.Sprintf("c%d", j)
		}
		for seen[name] {
			name = fmt.Sprintf("%s_%d", name, j)
		}
		seen[name] = true
		out[j] = name
	}
	return out
}
