package verify

import (
	"encoding/json"
	"math"
)

// MarshalJSON writes an infinite or NaN error (a NaN against a number, any difference
// against an all-zero reference) as null, which JSON can represent, instead of failing.
func (o OutputReport) MarshalJSON() ([]byte, error) {
	type plain OutputReport
	v := struct {
		plain
		MaxAbs *float64 `json:"max_abs"`
		MaxRel *float64 `json:"max_rel"`
	}{plain: plain(o), MaxAbs: finiteOrNil(o.MaxAbs), MaxRel: finiteOrNil(o.MaxRel)}
	return json.Marshal(v)
}

func finiteOrNil(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}
