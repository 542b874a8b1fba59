package typo

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"split", "split", 0}, {"splti", "split", 1},
		{"spilt", "split", 1}, {"a100-8g", "a100-80g", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
		{"h200x", "h200", 1}, {"größe", "grösse", 2},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}
