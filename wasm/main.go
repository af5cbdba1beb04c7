//go:build js && wasm

// Command wasm is Tidemark's live panel, compiled with GOOS=js GOARCH=wasm.
package main

func main() {
	select {}
}
