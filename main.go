// Command tidemark runs the Tidemark lab: a replicated Kafka-style broker
// cluster on loopback plus the web UI that shows it. See README.md.
package main

import (
	"fmt"
	"os"

	"tidemark/server"
)

func main() {
	if err := server.Main(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tidemark:", err)
		os.Exit(1)
	}
}
