package units

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{-1, "unknown"}, {0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{501760, "490.0 KiB"}, {1 << 20, "1.00 MiB"}, {3 << 19, "1.50 MiB"},
		{1610612736, "1.50 GiB"}, {1 << 40, "1.00 TiB"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
