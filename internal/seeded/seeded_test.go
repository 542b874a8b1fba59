package seeded

import "testing"

// The streams are fixed: a generator's weights (and every test that checks a generated
// model's outputs) depend on these exact values.
func TestStreamsFixed(t *testing.T) {
	r := New(1, "w")
	a, b := r.Uint64(), r.Uint64()
	if a == b {
		t.Fatalf("two draws equal: %x", a)
	}
	if c := New(1, "w").Uint64(); c != a {
		t.Fatalf("same seed and name: %x then %x", a, c)
	}
	if New(1, "x").Uint64() == a || New(2, "w").Uint64() == a {
		t.Fatal("another name or seed gives the same stream")
	}
	v := Uniform(7, "t", 1000, 0.5)
	lo, hi := float32(1), float32(-1)
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo < -0.5 || hi >= 0.5 || lo > -0.45 || hi < 0.45 {
		t.Fatalf("Uniform(…, 0.5) spans [%v, %v]", lo, hi)
	}
}
