// Package server wires Tidemark together: flags, the broker cluster and the web UI.
package server

import (
	"flag"
	"fmt"
)

// Main parses the command-line flags and runs the lab until it is stopped.
func Main(args []string) error {
	fs := flag.NewFlagSet("tidemark", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "HTTP listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Println("tidemark: web UI not built yet; would listen on", *addr)
	return nil
}
