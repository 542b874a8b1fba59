package main

import (
	"testing"

	"github.com/onnxpart/onnxpart/internal/typo"
)

// TestSuggest: the "did you mean" of misspelt flags and commands.
func TestSuggest(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"kitten", "sitting", 3}, {"splti", "split", 1}, {"devics", "devices", 1}, {"", "abc", 3}, {"µs", "ms", 1}, {"same", "same", 0}} {
		if got := typo.Distance(c.a, c.b); got != c.want {
			t.Errorf("typo.Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	flags := []string{"devices", "dim", "time-limit", "stages", "seed", "output"}
	commands := []string{"inspect", "plan", "profile", "split", "verify"}
	for _, c := range []struct {
		word  string
		among []string
		want  string
	}{
		{"devics", flags, "devices"},
		{"Devices", flags, "devices"},
		{"time-limt", flags, "time-limit"},
		{"timelimit", flags, "time-limit"},
		{"dev", flags, "devices"}, // a prefix
		{"sed", flags, "seed"},
		{"k", flags, ""},
		{"frobnicate", flags, ""},
		{"splti", commands, "split"},
		{"inpsect", commands, "inspect"},
		{"pln", commands, "plan"},
		{"run", commands, ""},
	} {
		if got := suggest(c.word, c.among); got != c.want {
			t.Errorf("suggest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
}
