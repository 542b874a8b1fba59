package stats

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 9}, 5},
		{[]float64{-1, -3}, -2},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median modified its input: %v → %v", c.in, in)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestGeoMean(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{4}, 4},
		{[]float64{1, 4}, 2},
		{[]float64{2, 8, 0.5}, 2},
		{[]float64{0, 1e12}, 1},
	} {
		if got := GeoMean(c.in); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("GeoMean(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if !math.IsNaN(GeoMean(nil)) {
		t.Error("GeoMean(nil) is not NaN")
	}
}
