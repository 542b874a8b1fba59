package measure

import (
	"math"

	"github.com/onnxpart/onnxpart/profile"
)

func fig(v float64, s profile.Source, note string) profile.Figure {
	return profile.Figure{Value: v, Source: s, Note: note}
}

func applyKindDefaults(d *profile.Device) { profile.ApplyKindDefaults(d) }

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func oneDevice(d profile.Device) *profile.Cluster {
	return &profile.Cluster{Devices: []profile.Device{d}, Links: [][]profile.Link{{{Kind: profile.LinkSelf}}}}
}
