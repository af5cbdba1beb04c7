package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedIsCurrent: decode_gen.go is what the types' json tags say
// now; a field added without go generate ./events fails here.
func TestGeneratedIsCurrent(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../decode_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("events/decode_gen.go is stale: run go generate ./events")
	}
}
