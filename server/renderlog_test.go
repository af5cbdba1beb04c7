package server

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestRenderEntryIsTheRenderLog: the class benchmark decodes the panel's
// render log as the panel writes it. It decoded [4]float64 after the log
// grew to 7 numbers, silently dropping the last three; renderEntry holds
// as many fields as the entry wasm/main.go appends and refuses any other
// length.
func TestRenderEntryIsTheRenderLog(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../wasm/main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	written := -1 // the length of the []any the panel appends to renderLog
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "append" {
			return true
		}
		if sel, ok := call.Args[0].(*ast.SelectorExpr); ok && sel.Sel.Name == "renderLog" {
			if lit, ok := call.Args[1].(*ast.CompositeLit); ok {
				written = len(lit.Elts)
			}
		}
		return true
	})
	if written != renderFields {
		t.Fatalf("wasm/main.go appends render log entries of %d numbers; renderEntry decodes %d", written, renderFields)
	}
	var log []renderEntry
	if err := json.Unmarshal([]byte(`[[12,1764550000123.5,3.25,1.5,0.75,5,2]]`), &log); err != nil ||
		log[0] != (renderEntry{Seq: 12, At: 1764550000123.5, RenderMs: 3.25, HandleMs: 1.5, LanesMs: 0.75, Parts: 5, Messages: 2}) {
		t.Fatalf("decoded %+v, %v", log, err)
	}
	if out, err := json.Marshal(log); err != nil || string(out) != `[[12,1764550000123.5,3.25,1.5,0.75,5,2]]` {
		t.Fatalf("encoded %s, %v: not as the panel writes it", out, err)
	}
	for _, bad := range []string{`[[12,1,2,3]]`, `[[1,2,3,4,5,6,7,8]]`, `[["12",1,2,3,4,5,6]]`} {
		if err := json.Unmarshal([]byte(bad), &log); err == nil {
			t.Errorf("%s decoded as a render log", bad)
		}
	}
}

// renderEntry is one render of the panel's log, window.tidemarkRenders()
// (wasm/main.go): the Seq it shows, when it ended (At, ms since the Unix
// epoch), the ms spent rendering, decoding and applying messages since
// the previous render (HandleMs) and rendering the lanes, the parts that
// ran (frameParts' bits) and the messages decoded since the previous
// render. It decodes exactly that array: one of another length is an
// error, not an entry cut short or padded with zeros.
type renderEntry struct {
	Seq, At, RenderMs, HandleMs, LanesMs, Parts, Messages float64
}

// renderFields is how many numbers a render log entry holds.
const renderFields = 7

// UnmarshalJSON decodes [seq, at, render ms, handle ms, lanes ms, parts,
// messages].
func (r *renderEntry) UnmarshalJSON(b []byte) error {
	var a []float64
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != renderFields {
		return fmt.Errorf("a render log entry of %d numbers, want %d (seq, at, render, handle, lanes ms, parts, messages): %s", len(a), renderFields, b)
	}
	*r = renderEntry{a[0], a[1], a[2], a[3], a[4], a[5], a[6]}
	return nil
}

// MarshalJSON writes the entry as the panel does, an array of its numbers.
func (r renderEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal([renderFields]float64{r.Seq, r.At, r.RenderMs, r.HandleMs, r.LanesMs, r.Parts, r.Messages})
}
