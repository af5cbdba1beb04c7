// Package server wires Tidemark together: flags, the broker cluster and the web UI.
package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tidemark/events/history"
	"tidemark/internal/fds"
	"tidemark/lessons"
	"tidemark/server/broker"
	"tidemark/server/chaos"
	"tidemark/server/class"
	"tidemark/server/cluster"
	"tidemark/server/controller"
	"tidemark/server/experiment"
	"tidemark/server/labs"
	"tidemark/server/metrics"
	"tidemark/server/web"
	"tidemark/server/wire"
)

// config is the parsed command line.
type config struct {
	addr      string // HTTP listen address
	dataDir   string // where the brokers keep their log directories
	brokers   int    // how many brokers the cluster runs
	kafkaPort int    // first broker's Kafka listener port; broker i listens on kafkaPort+i-1; 0 picks free ports
	paused    bool   // start with the lab clock paused
	// historyBytes bounds the lab's event history on disk (<data-dir>/history);
	// 0 keeps none.
	historyBytes int64
	// fencingRule is the controller's fencing rule; "" keeps the stored one.
	fencingRule string
	// lessonsDir is a teacher's directory of *.lesson files, added to the
	// built-in lessons; "" adds none.
	lessonsDir string

	allowedHosts         []string // Host names the web UI answers besides loopback ones
	maxPartitionReplicas int      // the lab's partition-replica budget; 0: computed from the machine
	maxBrokerPartitions  int      // each broker's partition-replica budget; 0: computed from the descriptor limit
	connectionsMaxIdle   time.Duration
	maxConnectionsPerIP  int
	autoCreateTopics     bool

	// className turns on class mode: one seat per learner (server/class).
	className         string
	seats             int           // class mode: seats at least
	maxAwakeSeats     int           // class mode: seat clusters running at once; 0: computed
	hibernateAfter    time.Duration // class mode: an unused seat's cluster sleeps after this long
	maxLessonClusters int           // lesson and chaos clusters at once; 0: 4, or in class mode the awake-seat default
	// observe, when it names a cluster, replaces the lab (observe_mode.go).
	observe observeConfig

	static fs.FS        // tests: the static tree to serve instead of the embedded one
	logger *slog.Logger // tests: where the cluster logs (default stderr, warnings and up)
}

// maxBrokers keeps the lab to what a laptop (and a lane diagram) can show.
const maxBrokers = cluster.MaxBrokers

// Topic demo, created on first start: 3 partitions, replication factor
// min(3, brokers), min.insync.replicas min(2, replication factor).
const (
	demoTopic      = "demo"
	demoPartitions = 3
)

// mainLab is the main cluster's id among the hosted labs and its cluster
// label in /metrics.
const mainLab = "main"

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("tidemark", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "HTTP listen address of the web UI")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory for the brokers' log directories")
	fs.IntVar(&c.brokers, "brokers", 3, fmt.Sprintf("number of brokers (1..%d)", maxBrokers))
	fs.IntVar(&c.kafkaPort, "kafka-port", 9092, "Kafka listener port of the first broker; the others use the following ports (0: any free ports)")
	fs.Int64Var(&c.historyBytes, "history-bytes", history.DefaultMaxBytes, "bytes of the lab's event history kept on disk in <data-dir>/history for the timeline and GET /api/v1/history, oldest dropped first; each start begins a fresh history (0: keep none)")
	fs.BoolVar(&c.paused, "paused", false, "start with the lab clock paused (step it from the UI or the API)")
	fs.StringVar(&c.lessonsDir, "lessons-dir", "", "a directory of lesson files (*.lesson, the scenario language of lessons/data) added to the built-in lessons; a bad file is refused with its line and what is wrong")
	fs.StringVar(&c.fencingRule, "fencing-rule", "", "the controller's fencing rule: kraft-elr (Kafka 4.1 KRaft with ELR), kraft (KRaft without ELR), zookeeper (ZooKeeper mode, KIP-380), zookeeper-pre-2.2 (history) or kraft-elr-recovery (lab-only); empty keeps the one stored in --data-dir (kraft-elr at first)")
	fs.Func("allowed-hosts", "comma-separated Host names (name or name:port) the web UI answers besides localhost, 127.0.0.1 and [::1]", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.allowedHosts = append(c.allowedHosts, h)
			}
		}
		return nil
	})
	fs.IntVar(&c.maxPartitionReplicas, "max-partition-replicas", 0, fmt.Sprintf(
		"most partition replicas (partitions × replication factor, all topics) a lab may hold; 0: computed from the descriptor limit and memory (%d here)",
		controller.DefaultMaxPartitionReplicas()))
	fs.IntVar(&c.maxBrokerPartitions, "max-broker-partitions", 0,
		"most partition replicas one broker may host (Kafka's max.broker.partitions); 0: the brokers' even share of the descriptor limit")
	fs.DurationVar(&c.connectionsMaxIdle, "connections-max-idle", wire.DefaultConnectionsMaxIdle,
		"Kafka listeners' connections.max.idle.ms: a connection with no request for this long is closed (0: never)")
	fs.IntVar(&c.maxConnectionsPerIP, "max-connections-per-ip", wire.DefaultMaxConnectionsPerIP(fds.Limit()),
		"Kafka listeners' max.connections.per.ip: more connections from one address are closed at once (0: no limit)")
	fs.BoolVar(&c.autoCreateTopics, "auto-create-topics", true,
		"Kafka's auto.create.topics.enable: a client's Metadata request for a topic that does not exist creates it (1 partition, replication factor up to 3)")
	fs.StringVar(&c.className, "class", "", "run a class of this name: each learner joins a private seat (own cluster, lessons, progress) with a code; prints the teacher's link and the codes")
	fs.IntVar(&c.seats, "seats", 0, "class mode: how many seats the class has (at least; the dashboard adds more)")
	fs.IntVar(&c.maxAwakeSeats, "max-awake-seats", 0, fmt.Sprintf(
		"class mode: most seat clusters running at once; idle ones hibernate to make room (0: computed from descriptors and memory, %d here)", class.DefaultMaxAwake()))
	fs.DurationVar(&c.hibernateAfter, "hibernate-after", 10*time.Minute, "class mode: a seat's cluster with no request and no open page for this long hibernates (stopped, state on disk) and wakes on the next action")
	fs.IntVar(&c.maxLessonClusters, "max-lesson-clusters", 0, "most lesson and chaos clusters at once (0: 4, in class mode the --max-awake-seats default)")
	c.observe.register(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	err := c.validate() // it may fill in the SASL password from the environment
	return c, err
}

func (c *config) validate() error {
	if err := c.observe.validate(); err != nil {
		return err
	}
	if c.brokers < 1 || c.brokers > maxBrokers {
		return fmt.Errorf("--brokers %d: must be between 1 and %d", c.brokers, maxBrokers)
	}
	if c.kafkaPort < 0 || c.kafkaPort+c.brokers-1 > 65535 {
		return fmt.Errorf("--kafka-port %d: ports %d..%d must lie in 1..65535 (or 0 for any free ports)", c.kafkaPort, c.kafkaPort, c.kafkaPort+c.brokers-1)
	}
	if c.dataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.historyBytes < 0 || c.historyBytes > 0 && c.historyBytes < 1<<20 {
		return fmt.Errorf("--history-bytes %d: must be at least 1 MiB (1048576), or 0 to keep no history", c.historyBytes)
	}
	if c.lessonsDir != "" {
		if _, err := lessons.AddDir(c.lessonsDir); err != nil {
			return fmt.Errorf("--lessons-dir: %v", err)
		}
	}
	if c.fencingRule != "" {
		if _, err := controller.ParseFencingRule(c.fencingRule); err != nil {
			return fmt.Errorf("--fencing-rule: %v", err)
		}
	}
	if c.connectionsMaxIdle < 0 || c.maxConnectionsPerIP < 0 {
		return errors.New("--connections-max-idle and --max-connections-per-ip must not be negative (0 turns them off)")
	}
	if c.maxPartitionReplicas < 0 {
		return fmt.Errorf("--max-partition-replicas %d: must be positive (or 0 for the computed default)", c.maxPartitionReplicas)
	}
	if c.maxBrokerPartitions < 0 {
		return fmt.Errorf("--max-broker-partitions %d: must be positive (or 0 for the computed default)", c.maxBrokerPartitions)
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", c.addr, err)
	}
	if ip := net.ParseIP(host); c.className == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// The lab injects faults on request and has no authentication
		// outside class mode.
		return fmt.Errorf("--addr %q: the lab only listens on loopback (127.0.0.1, ::1 or localhost) unless it runs a class (--class)", c.addr)
	}
	if c.className != "" && len(c.observe.seeds) > 0 {
		return errors.New("--class and --observe do not go together: a class runs its own clusters")
	}
	if c.className == "" && (c.seats != 0 || c.maxAwakeSeats != 0) {
		return errors.New("--seats and --max-awake-seats need --class")
	}
	if c.seats < 0 || c.seats > class.MaxSeats {
		return fmt.Errorf("--seats %d: must be between 0 and %d", c.seats, class.MaxSeats)
	}
	if c.maxAwakeSeats < 0 || c.maxLessonClusters < 0 || c.hibernateAfter <= 0 {
		return errors.New("--max-awake-seats and --max-lesson-clusters must not be negative (0: computed), --hibernate-after must be positive")
	}
	return nil
}

// offIfZero maps a flag's 0 ("off") to wire.Options' negative ("off"; its
// 0 is the default).
func offIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
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
	if len(cfg.observe.seeds) > 0 {
		return runObserve(ctx, cfg, os.Stdout, nil)
	}
	return run(ctx, cfg, os.Stdout, nil)
}

// run opens the cluster in cfg.dataDir (recovering what is there), creates
// topic demo if it is missing, serves the web UI, prints the URL to out,
// calls started (tests) with the URL and the cluster, and when ctx ends
// stops the web server and then shuts the cluster down cleanly.
func run(ctx context.Context, cfg config, out io.Writer, started func(url string, cl *cluster.Cluster)) (err error) {
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	var rule *controller.FencingRule
	if cfg.fencingRule != "" {
		r, _ := controller.ParseFencingRule(cfg.fencingRule) // validated
		rule = &r
	}
	controller.SetMaxPartitionReplicas(cfg.maxPartitionReplicas)
	controller.SetMaxBrokerPartitions(cfg.maxBrokerPartitions)
	if cfg.className != "" {
		// One process, one descriptor limit: the budgets, which each lab
		// applies to its own topics, become each lab's share.
		shareBudgets(cfg)
	}
	// /metrics reports the main cluster as cluster="main".
	mets := metrics.New(logger)
	cl, err := cluster.Open(cluster.Options{MessageEvents: true, DataDir: cfg.dataDir, Brokers: cfg.brokers, KafkaPort: cfg.kafkaPort,
		Paused: cfg.paused, HistoryBytes: cfg.historyBytes, Logger: logger, FencingRule: rule, Broker: broker.Config{
			ConnectionsMaxIdle: offIfZero(cfg.connectionsMaxIdle), MaxConnectionsPerIP: offIfZero(cfg.maxConnectionsPerIP),
			NoAutoCreateTopics: !cfg.autoCreateTopics, OnRequest: mets.RequestObserver(mainLab)}})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w (another lab running? --kafka-port picks other ports)", err)
		}
		return fmt.Errorf("starting the cluster in %s: %w", cfg.dataDir, err)
	}
	defer func() {
		// Clean shutdown: logs flushed, checkpoints written; the next start
		// recovers nothing it does not have to.
		if cerr := cl.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("shutting the cluster down: %w", cerr)
		}
	}()
	if err := ensureDemo(cl, cfg.brokers); err != nil {
		return err
	}
	defer mets.Add(mainLab, cl)()

	// Lesson runs get their own clusters under <data-dir>/lessons, removed
	// when they end; the main cluster is one of the hosted labs.
	maxLessons := cfg.maxLessonClusters
	if maxLessons == 0 && cfg.className != "" {
		maxLessons = class.DefaultMaxAwake()
	}
	hosted, err := labs.New(labs.Options{Root: filepath.Join(cfg.dataDir, "lessons"), MaxClusters: maxLessons, Logger: logger,
		// /metrics reports each lesson or chaos run's cluster under its lab id.
		Watch: func(id string, c *cluster.Cluster) func() { return mets.Add(id, c) }})
	if err != nil {
		return err
	}
	defer hosted.Close()
	if _, err := hosted.Pin(mainLab, cl); err != nil {
		return err
	}
	lessonRuns, err := lessons.NewService(lessons.Options{Labs: hosted, Logger: logger, MessageEvents: true})
	if err != nil {
		return err
	}
	defer lessonRuns.Close()

	chaosRuns, err := chaos.NewService(chaos.ServiceOptions{Labs: hosted, Logger: logger, Run: experiment.RunChaos, Compare: experiment.RunCompare})
	if err != nil {
		return err
	}
	defer chaosRuns.Close()
	mets.SetChaos(chaosRuns)

	experiments := experiment.NewService(experiment.ServiceOptions{Logger: logger})
	defer experiments.Close()

	wopts := web.Options{Lab: lab{cl}, Static: cfg.static, Logger: logger, Lessons: lessonRuns, Chaos: chaosRuns, Experiments: experiments,
		AllowedHosts: cfg.allowedHosts, Metrics: mets.Handler()}
	var (
		ws      *web.Server // the teacher's in class mode: the seats share its static files
		cls     *class.Class
		teacher string
	)
	if cfg.className != "" {
		wopts.AllowedHosts = append(wopts.AllowedHosts, classHosts(cfg.addr)...)
		cls, teacher, err = class.Open(class.Options{Dir: filepath.Join(cfg.dataDir, "class"), Name: cfg.className, Seats: cfg.seats,
			Cluster: cluster.Options{MessageEvents: true, Brokers: cfg.brokers, Paused: cfg.paused, HistoryBytes: cfg.historyBytes, Logger: logger, FencingRule: rule,
				Broker: broker.Config{ConnectionsMaxIdle: offIfZero(cfg.connectionsMaxIdle), MaxConnectionsPerIP: offIfZero(cfg.maxConnectionsPerIP),
					NoAutoCreateTopics: !cfg.autoCreateTopics}},
			Setup: func(c *cluster.Cluster) error { return ensureDemo(c, cfg.brokers) },
			NewHandler: func(env class.Env) (http.Handler, io.Closer, error) {
				sw, err := web.New(web.Options{Lab: seatLab{lab{env.Cluster}, env.Learner}, Logger: logger, Lessons: env.Lessons, Chaos: env.Chaos,
					AllowedHosts: wopts.AllowedHosts, StaticFrom: ws, Owner: "seat-" + strconv.Itoa(env.Seat)})
				if err != nil {
					return nil, nil, err
				}
				// The teacher's /metrics reports each awake seat as cluster="seat-<n>".
				unreport := mets.Add("seat-"+strconv.Itoa(env.Seat), env.Cluster)
				return sw.Handler(), closerFunc(func() { sw.Close(); unreport() }), nil
			},
			Runs: hosted, MaxAwake: cfg.maxAwakeSeats, IdleAfter: cfg.hibernateAfter, Logger: logger})
		if err != nil {
			return err
		}
		defer cls.Close() // after the web server: it ends the seats' websockets
		wopts.Class = cls
	}
	ws, err = web.New(wopts)
	if err != nil {
		return err
	}
	return serveUI(ctx, cfg.addr, ws, out, func(url string) {
		snap := cl.Snapshot()
		var listeners []string
		for _, b := range snap.Brokers {
			listeners = append(listeners, b.Listener)
		}
		fmt.Fprintf(out, "tidemark: %d brokers (Kafka listeners %v), data in %s\n", cfg.brokers, listeners, cfg.dataDir)
		if cls != nil {
			printClass(out, cls, publicURL(cfg.addr, url), teacher)
		}
		if started != nil {
			started(url, cl)
		}
	})
}

// serveUI serves ws on addr until ctx ends: it prints the URL and the
// panel's size to out, calls listening with the URL, and on the way out
// stops the web server (requests in flight answer) and then ends the
// websockets. ws is closed when it returns.
func serveUI(ctx context.Context, addr string, ws *web.Server, out io.Writer, listening func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		ws.Close()
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w (--addr picks another address)", err)
		}
		return err
	}
	// Requests run under baseCtx, which shutdown cancels first: a produce
	// waiting for acks on a paused clock answers at once instead of holding
	// the shutdown up.
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := web.NewHTTPServer(ws.Handler(), baseCtx)
	// Every connection counts from accept: capped per peer and in total
	// below the descriptor limit, the rest kept for the brokers.
	limited := web.LimitConns(srv, ln, web.DefaultConnLimits(fds.Limit()), nil)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(limited) }()

	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(out, "tidemark: web UI on %s\n", url)
	if raw, gz, ok := ws.StaticSize("wasm/panel.wasm"); ok {
		fmt.Fprintf(out, "tidemark: live panel %d KiB (%d KiB gzip)\n", raw>>10, gz>>10)
	} else {
		fmt.Fprintln(out, "tidemark: live panel not built (go tool task wasm); pages work without it")
	}
	listening(url)

	select {
	case err := <-serveErr:
		ws.Close()
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "tidemark: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cancelRequests()
	err = srv.Shutdown(shutdownCtx) // stop accepting, let requests in flight answer
	ws.Close()                      // then end the hijacked websockets
	if serr := <-serveErr; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// shareBudgets divides the process's partition-replica budgets (those not
// set by a flag) among the clusters a class runs at once: every awake seat,
// as many lesson and chaos clusters, and the teacher's, an equal share each
// (never below the budgets' floors, which keep topic demo and a lesson
// possible). Without it every seat had the whole lab's budget, and three
// seats could take the process past its descriptors.
func shareBudgets(cfg config) {
	awake := cfg.maxAwakeSeats
	if awake == 0 {
		awake = class.DefaultMaxAwake()
	}
	lessons := cfg.maxLessonClusters
	if lessons == 0 {
		lessons = class.DefaultMaxAwake()
	}
	clusters := awake + lessons + 1
	if cfg.maxPartitionReplicas == 0 {
		controller.SetMaxPartitionReplicas(budgetShare(controller.DefaultMaxPartitionReplicas(), clusters, 64))
	}
	if cfg.maxBrokerPartitions == 0 {
		controller.SetMaxBrokerPartitions(budgetShare(controller.DefaultMaxBrokerPartitions(cfg.brokers), clusters, 32))
	}
}

// budgetShare is total over clusters, at least floor.
func budgetShare(total, clusters, floor int) int { return max(total/max(clusters, 1), floor) }

// ensureDemo creates topic demo unless it exists (a restart keeps it).
func ensureDemo(cl *cluster.Cluster, brokers int) error {
	if _, ok := cl.Controller().Topic(demoTopic); ok {
		return nil
	}
	rf := min(3, brokers)
	_, err := cl.CreateTopic(demoTopic, demoPartitions, int16(rf),
		map[string]string{"min.insync.replicas": strconv.Itoa(min(2, rf))})
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", demoTopic, err)
	}
	return nil
}

// closerFunc makes a func() an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// classHosts are the Host names learners reach a class lab by when it
// listens beyond loopback: the machine's name and its interface addresses
// (for a wildcard --addr), or --addr's own host.
func classHosts(addr string) []string {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		if ip == nil || !ip.IsLoopback() {
			return []string{host}
		}
		return nil
	}
	var out []string
	if name, err := os.Hostname(); err == nil {
		out = append(out, name)
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			if n.IP.To4() != nil {
				out = append(out, n.IP.String())
			} else {
				out = append(out, "["+n.IP.String()+"]")
			}
		}
	}
	return out
}

// publicURL is the base URL learners open, from the URL the server
// listens on: --addr's host, or for a wildcard address the machine's first
// non-loopback IPv4 address (else 127.0.0.1).
func publicURL(addr, listening string) string {
	u, _ := neturl.Parse(listening)
	port := u.Port()
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		for _, h := range classHosts(addr) {
			if ip := net.ParseIP(h); ip != nil && ip.To4() != nil {
				host = h
				break
			}
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// printClass prints the teacher's link (with this start's teacher token)
// and each seat's join code and link.
func printClass(out io.Writer, cls *class.Class, base, teacher string) {
	fmt.Fprintf(out, "tidemark: class %q, %d seats (at most %d clusters awake)\n", cls.Name(), cls.Len(), cls.MaxAwake())
	fmt.Fprintf(out, "tidemark: teacher: %s/class?token=%s\n", base, teacher)
	for _, s := range cls.Seats() {
		who := ""
		if s.Name != "" {
			who = " (" + s.Name + ")"
		}
		fmt.Fprintf(out, "tidemark: seat %d%s: code %s  %s/join?code=%s\n", s.ID, who, s.Code, base, s.Code)
	}
}
