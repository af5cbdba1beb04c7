package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"tidemark/server/metrics"
	"tidemark/server/observe"
	"tidemark/server/web"
)

// observeConfig is the observe-mode part of the command line: a real
// Kafka cluster to show read-only instead of running a lab, and how to
// reach it (TLS and SASL as kgo offers them).
type observeConfig struct {
	seeds         []string
	tls           bool
	tlsCA         string // PEM file of the CAs to trust; "" the system's
	tlsServerName string
	saslMechanism string // plain, scram-sha-256, scram-sha-512; "" none
	saslUser      string
	saslPassword  string
}

// observePasswordEnv carries the SASL password without putting it on the
// command line, where ps shows it.
const observePasswordEnv = "TIDEMARK_OBSERVE_SASL_PASSWORD"

func (o *observeConfig) register(fs *flag.FlagSet) {
	fs.Func("observe", "observe a real Kafka cluster read-only instead of running a lab: bootstrap addresses host:port[,host:port…]", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				o.seeds = append(o.seeds, h)
			}
		}
		return nil
	})
	fs.BoolVar(&o.tls, "observe-tls", false, "connect to the observed cluster with TLS")
	fs.StringVar(&o.tlsCA, "observe-tls-ca", "", "PEM file of the CA certificates to trust for --observe-tls (default the system's); implies --observe-tls")
	fs.StringVar(&o.tlsServerName, "observe-tls-server-name", "", "server name to verify the brokers' certificates against (default each broker's host)")
	fs.StringVar(&o.saslMechanism, "observe-sasl-mechanism", "", "SASL mechanism for the observed cluster: plain, scram-sha-256 or scram-sha-512")
	fs.StringVar(&o.saslUser, "observe-sasl-user", "", "SASL user name")
	fs.StringVar(&o.saslPassword, "observe-sasl-password", "", "SASL password (or set "+observePasswordEnv+", which ps does not show)")
}

// validate checks the flags' combinations; options builds on them.
func (o *observeConfig) validate() error {
	if len(o.seeds) == 0 {
		if o.tls || o.tlsCA != "" || o.tlsServerName != "" || o.saslMechanism != "" || o.saslUser != "" || o.saslPassword != "" {
			return errors.New("--observe-tls… and --observe-sasl-… need --observe host:port")
		}
		return nil
	}
	if o.saslPassword == "" {
		o.saslPassword = os.Getenv(observePasswordEnv)
	}
	switch o.saslMechanism {
	case "":
		if o.saslUser != "" || o.saslPassword != "" {
			return errors.New("--observe-sasl-user and the password need --observe-sasl-mechanism (plain, scram-sha-256 or scram-sha-512)")
		}
	case "plain", "scram-sha-256", "scram-sha-512":
		if o.saslUser == "" {
			return fmt.Errorf("--observe-sasl-mechanism %s needs --observe-sasl-user", o.saslMechanism)
		}
	default:
		return fmt.Errorf("--observe-sasl-mechanism %q: want plain, scram-sha-256 or scram-sha-512", o.saslMechanism)
	}
	_, err := o.tlsConfig()
	return err
}

// tlsConfig is the TLS configuration to dial with; nil without TLS.
func (o *observeConfig) tlsConfig() (*tls.Config, error) {
	if !o.tls && o.tlsCA == "" && o.tlsServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.tlsServerName}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--observe-tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--observe-tls-ca %s: no PEM certificate in it", o.tlsCA)
		}
	}
	return cfg, nil
}

func (o *observeConfig) mechanism() sasl.Mechanism {
	switch o.saslMechanism {
	case "plain":
		return plain.Auth{User: o.saslUser, Pass: o.saslPassword}.AsMechanism()
	case "scram-sha-256":
		return scram.Auth{User: o.saslUser, Pass: o.saslPassword}.AsSha256Mechanism()
	case "scram-sha-512":
		return scram.Auth{User: o.saslUser, Pass: o.saslPassword}.AsSha512Mechanism()
	}
	return nil
}

// observedLab is the /metrics cluster label of an observed cluster.
const observedLab = "observed"

// runObserve shows the Kafka cluster at cfg.observe.seeds: it polls it
// (one poll first, so a wrong address or credential fails at once), serves
// the web UI read-only, prints the URL to out, calls started (tests) with
// it, and stops when ctx ends.
func runObserve(ctx context.Context, cfg config, out io.Writer, started func(url string)) error {
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	tlsCfg, err := cfg.observe.tlsConfig()
	if err != nil {
		return err
	}
	obs, err := observe.New(observe.Options{Seeds: cfg.observe.seeds, TLS: tlsCfg, SASL: cfg.observe.mechanism(), Logger: logger})
	if err != nil {
		return err
	}
	defer obs.Close()
	if err := obs.Poll(ctx); err != nil {
		return err
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() { defer close(polled); obs.Run(pollCtx) }()
	defer func() { stopPolling(); <-polled }()

	mets := metrics.New(logger)
	defer mets.Add(observedLab, obs)()
	ws, err := web.New(web.Options{Lab: obs, Static: cfg.static, Logger: logger, AllowedHosts: cfg.allowedHosts, Metrics: mets.Handler()})
	if err != nil {
		return err
	}
	return serveUI(ctx, cfg.addr, ws, out, func(url string) {
		fmt.Fprintf(out, "tidemark: observing the Kafka cluster at %s (read-only)\n", strings.Join(cfg.observe.seeds, ","))
		if started != nil {
			started(url)
		}
	})
}
