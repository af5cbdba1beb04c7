// Package server wires Tidemark together: flags, the broker cluster and the web UI.
package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"tidemark/server/web"
)

// config is the parsed command line.
type config struct {
	addr      string // HTTP listen address
	dataDir   string // where the brokers keep their log directories
	brokers   int    // how many brokers the cluster runs
	kafkaPort int    // first broker's Kafka listener port; broker i listens on kafkaPort+i-1

	static fs.FS // tests: the static tree to serve instead of the embedded one
}

// maxBrokers keeps the lab to what a laptop (and a lane diagram) can show.
const maxBrokers = 9

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("tidemark", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "HTTP listen address of the web UI")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory for the brokers' log directories")
	fs.IntVar(&c.brokers, "brokers", 3, fmt.Sprintf("number of brokers (1..%d)", maxBrokers))
	fs.IntVar(&c.kafkaPort, "kafka-port", 9092, "Kafka listener port of the first broker; the others use the following ports")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return c, c.validate()
}

func (c config) validate() error {
	if c.brokers < 1 || c.brokers > maxBrokers {
		return fmt.Errorf("--brokers %d: must be between 1 and %d", c.brokers, maxBrokers)
	}
	if c.kafkaPort < 1 || c.kafkaPort+c.brokers-1 > 65535 {
		return fmt.Errorf("--kafka-port %d: ports %d..%d must lie in 1..65535", c.kafkaPort, c.kafkaPort, c.kafkaPort+c.brokers-1)
	}
	if c.dataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", c.addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// The lab injects faults on request and has no authentication.
		return fmt.Errorf("--addr %q: the lab only listens on loopback (127.0.0.1, ::1 or localhost)", c.addr)
	}
	return nil
}

// Main parses the command-line flags and runs the lab until SIGINT or SIGTERM.
func Main(args []string) error {
	cfg, err := parseFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cfg, os.Stdout, nil)
}

// run starts the lab and the web UI, prints the URL to out, calls started
// (tests) with the URL and the lab, and shuts down cleanly when ctx ends.
func run(ctx context.Context, cfg config, out io.Writer, started func(url string, lab *staticLab)) error {
	// TODO(cluster): replace the stand-in with the broker cluster in cfg.dataDir.
	lab := newStaticLab(cfg)
	ws, err := web.New(web.Options{Lab: lab, Static: cfg.static})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: ws.Handler(), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(out, "tidemark: web UI on %s (%d brokers; cluster not built yet, showing a static stand-in)\n", url, cfg.brokers)
	if raw, gz, ok := ws.StaticSize("wasm/panel.wasm"); ok {
		fmt.Fprintf(out, "tidemark: live panel %d KiB (%d KiB gzip)\n", raw>>10, gz>>10)
	} else {
		fmt.Fprintln(out, "tidemark: live panel not built (go tool task wasm); pages work without it")
	}
	if started != nil {
		started(url, lab)
	}

	select {
	case err := <-serveErr:
		ws.Close()
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "tidemark: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx) // stop accepting, finish requests in flight
	ws.Close()                      // then end the hijacked websockets
	if errors.Is(<-serveErr, http.ErrServerClosed) && err == nil {
		return nil
	}
	return err
}
