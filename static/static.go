// Package static holds the files the web UI serves under /static/, embedded in
// the binary: the stylesheet, the panel loader and the compiled WASM panel.
//
// The wasm/ directory always holds README.md, so this package compiles before
// `go tool task wasm` has built wasm/panel.wasm and wasm/wasm_exec.js; the
// server then serves the pages without the live panel.
package static

import "embed"

// FS is the embedded file tree: app.css, panel.js, class-live.js (the
// teacher's live class) and wasm/.
//
//go:embed app.css panel.js class-live.js wasm
var FS embed.FS
