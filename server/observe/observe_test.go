package observe

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"tidemark/events"
	"tidemark/server/cluster"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newObserver(t *testing.T, opts Options) *Observer {
	t.Helper()
	opts.Logger = quiet
	o, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

// produce writes n records to topic (partition 0) and commits them as
// group's offsets for the first commit of them.
func produce(t *testing.T, seeds []string, topic string, n int, extra ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Value: []byte{byte('a' + i)}})
	}
	if err := cl.ProduceSync(ctxT(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// replay applies evs to a copy of prev: the events a poll published must
// take the last picture to the new one.
func replay(prev events.Snapshot, evs []events.Event) events.Snapshot {
	s := prev.Clone()
	for _, e := range evs {
		s.Apply(e)
	}
	return s
}

// TestObserveKfake polls franz-go's kfake cluster: brokers, controller,
// topics, leaders, ISR, ELR, HWs, log dirs, configs and a consumer
// group's lag; a produce between two polls is published as HW events that
// take the old picture to the new one.
func TestObserveKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	seeds := kc.ListenAddrs()
	produce(t, seeds, "orders", 3)

	// A consumer group that committed offset 1 of partition 0.
	gc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	fs := gc.PollRecords(ctxT(t), 1)
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, r := range fs.Records() {
		if r.Partition == 0 && r.Offset == 0 {
			if err := gc.CommitRecords(ctxT(t), r); err != nil {
				t.Fatal(err)
			}
		}
	}

	o := newObserver(t, Options{Seeds: seeds})
	if err := o.Poll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	snap := o.Snapshot()
	if len(snap.Brokers) != 3 || snap.Controller < 0 || snap.Broker(snap.Controller) == nil || !snap.Observed {
		t.Fatalf("brokers %+v, controller %d, observed %v", snap.Brokers, snap.Controller, snap.Observed)
	}
	for _, b := range snap.Brokers {
		if b.State != events.BrokerUp || !slices.Contains(seeds, b.Listener) {
			t.Fatalf("broker %+v (seeds %v)", b, seeds)
		}
	}
	p := snap.Partition("orders", 0)
	if p == nil || p.Leader < 0 || len(p.Replicas) == 0 || !slices.Contains(p.ISR, p.Leader) {
		t.Fatalf("orders-0: %+v", p)
	}
	leader := p.Replica(p.Leader)
	if leader == nil || leader.HW != 3 || leader.LEO != 3 || leader.LogStartOffset != 0 {
		t.Fatalf("leader replica %+v", leader)
	}
	if snap.Seq == 0 || snap.Seq != o.Bus().LastSeq() {
		t.Fatalf("snapshot seq %d, bus %d", snap.Seq, o.Bus().LastSeq())
	}
	first, _ := o.Bus().Since(0, 0)
	if got := replay(events.Snapshot{Controller: snap.Controller}, first); !sameState(got, snap) {
		t.Fatalf("the first poll's events give\n%+v\nnot\n%+v", got, snap)
	}

	info := o.Info()
	if len(info.LogDirs) == 0 || info.LogDirs[0].Dir == "" {
		t.Fatalf("log dirs %+v (unavailable %v)", info.LogDirs, info.Unavailable)
	}
	var g *Group
	for i := range info.Groups {
		if info.Groups[i].Group == "billing" {
			g = &info.Groups[i]
		}
	}
	if g == nil {
		t.Fatalf("groups %+v (unavailable %v)", info.Groups, info.Unavailable)
	}
	var lag0 *PartitionLag
	for i := range g.Lag {
		if g.Lag[i].Topic == "orders" && g.Lag[i].Partition == 0 {
			lag0 = &g.Lag[i]
		}
	}
	if lag0 == nil || lag0.Committed != 1 || lag0.End != 3 || lag0.Lag != 2 {
		t.Fatalf("billing's lag on orders-0: %+v (group %+v)", lag0, g)
	}

	// Two more records: the next poll publishes the HW (and LEO) moves.
	before := o.Snapshot()
	produce(t, seeds, "orders", 2)
	if err := o.Poll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	evs, _ := o.Bus().Since(before.Seq, 0)
	var hw bool
	for _, e := range evs {
		hw = hw || (e.Kind == events.KindHW && e.Topic == "orders" && e.Partition == 0 && e.Offsets.HW == 5)
	}
	after := o.Snapshot()
	if !hw || !sameState(replay(before, evs), after) {
		t.Fatalf("events %+v do not take\n%+v\nto\n%+v", evs, before, after)
	}
	// Nothing changed: a poll publishes nothing.
	if err := o.Poll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if o.Bus().LastSeq() != after.Seq {
		t.Fatalf("an unchanged cluster published %d events", o.Bus().LastSeq()-after.Seq)
	}
}

// sameState compares what the panel draws: brokers, topics, partitions
// and replicas (not Seq or Time).
func sameState(a, b events.Snapshot) bool {
	return dump(a) == dump(b)
}

func dump(s events.Snapshot) string {
	var b strings.Builder
	for _, br := range s.Brokers {
		b.WriteString(br.Listener + string(br.State) + ";")
	}
	for _, t := range s.Topics {
		b.WriteString(t.Name + ":")
		for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
			b.WriteString(k + "=" + t.Configs[k] + ",")
		}
		for _, p := range t.Partitions {
			b.WriteString(strings.Join([]string{itoa(p.Partition), itoa(p.Leader), itoa(p.LeaderEpoch), ints(p.Replicas), ints(p.ISR), ints(p.ELR)}, "/"))
			for _, r := range p.ReplicaLogs {
				b.WriteString("[" + itoa(r.Broker) + " " + itoa(int32(r.LEO)) + " " + itoa(int32(r.HW)) + " " + itoa(int32(r.LogStartOffset)) + "]")
			}
		}
		b.WriteString(";")
	}
	return b.String()
}

// TestObserveSASL: kfake with SASL on; the observer authenticates with
// PLAIN and with SCRAM-SHA-256; a wrong password, or none, fails the poll.
func TestObserveSASL(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "admin", "s3cret"), kfake.Superuser("SCRAM-SHA-256", "scram", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	for name, m := range map[string]Options{
		"plain":  {SASL: plain.Auth{User: "admin", Pass: "s3cret"}.AsMechanism()},
		"scram":  {SASL: scram.Auth{User: "scram", Pass: "s3cret"}.AsSha256Mechanism()},
		"wrong":  {SASL: plain.Auth{User: "admin", Pass: "nope"}.AsMechanism(), Timeout: 3 * time.Second},
		"noauth": {Timeout: 3 * time.Second},
	} {
		m.Seeds = kc.ListenAddrs()
		o := newObserver(t, m)
		err := o.Poll(ctxT(t))
		snap := o.Snapshot()
		switch name {
		case "plain", "scram":
			if err != nil || snap.Topic("t") == nil {
				t.Errorf("%s: %v, topics %+v", name, err, snap.Topics)
			}
		case "wrong":
			if err == nil { // kfake closes the connection on a failed authentication
				t.Errorf("wrong password: no error")
			}
		default:
			if err == nil {
				t.Errorf("no SASL against a SASL cluster: no error")
			}
		}
	}
}

// TestObserveLabListeners treats a lab cluster's own Kafka listeners as an
// external cluster: the observed picture agrees with the lab's own
// snapshot on brokers, leaders, leader epochs, ISR and HWs, and every
// broker's log dir is read with its partitions' sizes as on disk. A crash
// seen from outside: the broker left the metadata (shown crashed), the ISR
// shrank and, where that took it below min.insync.replicas, the crashed
// broker is in the ELR (the lab's default fencing rule, kraft-elr).
func TestObserveLabListeners(t *testing.T) {
	lab, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	if _, err := lab.CreateTopic("demo", 2, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.CreateTopic("strict", 1, 3, map[string]string{"min.insync.replicas": "3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Produce(ctxT(t), "demo", 0, 1, []cluster.Record{{Value: []byte("a")}, {Value: []byte("b")}}, time.Second); err != nil {
		t.Fatal(err)
	}
	for range 2 { // followers fetch, then learn the HW
		for _, id := range []int32{1, 2, 3} {
			if err := lab.StepFetch(ctxT(t), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	var seeds []string
	for _, b := range lab.Snapshot().Brokers {
		seeds = append(seeds, b.Listener)
	}
	o := newObserver(t, Options{Seeds: seeds[:1]})
	if err := o.Poll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	own, seen := lab.Snapshot(), o.Snapshot()
	if len(seen.Brokers) != 3 {
		t.Fatalf("brokers %+v", seen.Brokers)
	}
	for _, p := range own.Topic("demo").Partitions {
		sp := seen.Partition("demo", p.Partition)
		if sp == nil || sp.Leader != p.Leader || sp.LeaderEpoch != p.LeaderEpoch || !slices.Equal(sp.Replicas, p.Replicas) ||
			!slices.Equal(sortedCopy(sp.ISR), sortedCopy(p.ISR)) {
			t.Fatalf("partition %d: observed %+v, lab %+v", p.Partition, sp, p)
		}
		if hw := p.Replica(p.Leader).HW; sp.Replica(p.Leader).HW != hw {
			t.Fatalf("partition %d: observed HW %d, lab %d", p.Partition, sp.Replica(p.Leader).HW, hw)
		}
	}
	if seen.Topic("demo").Configs["min.insync.replicas"] != "2" {
		t.Fatalf("configs %v", seen.Topic("demo").Configs)
	}
	if hw := seen.Partition("demo", 0).Replica(seen.Partition("demo", 0).Leader).HW; hw != 2 {
		t.Fatalf("demo-0 HW %d, want 2", hw)
	}
	info := o.Info()
	if len(info.Unavailable) > 0 {
		t.Fatalf("unavailable: %q", info.Unavailable)
	}
	if len(info.LogDirs) != 3 {
		t.Fatalf("log dirs %+v", info.LogDirs)
	}
	for _, d := range info.LogDirs {
		if want := logFilesSize(t, d.Dir); d.Error != "" || d.Partitions != 3 || d.Size != want || d.Size == 0 ||
			filepath.Base(d.Dir) != "broker-"+itoa(d.Broker) {
			t.Fatalf("log dir %+v, want %d bytes of .log files", d, want)
		}
	}

	// Crash a follower of demo-0 and let the leader drop it from the ISR.
	p0 := own.Partition("demo", 0)
	victim := p0.Replicas[0]
	if victim == p0.Leader {
		victim = p0.Replicas[1]
	}
	if err := lab.Crash(victim); err != nil {
		t.Fatal(err)
	}
	for range 2 { // past the session timeout; then heartbeats bring the brokers the new metadata
		if err := lab.Step(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	before := o.Snapshot()
	if err := o.Poll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	after := o.Snapshot()
	if b := after.Broker(victim); b == nil || b.State != events.BrokerCrashed {
		t.Fatalf("crashed broker %d seen as %+v", victim, b)
	}
	if isr := after.Partition("demo", 0).ISR; slices.Contains(isr, victim) {
		t.Fatalf("ISR %v still holds crashed broker %d", isr, victim)
	}
	labNow := lab.Snapshot()
	labStrict, seenStrict := labNow.Partition("strict", 0), after.Partition("strict", 0)
	if !slices.Contains(seenStrict.ELR, victim) || !slices.Equal(seenStrict.ELR, labStrict.ELR) || slices.Contains(seenStrict.ISR, victim) {
		t.Fatalf("strict-0 observed ISR %v ELR %v, lab ELR %v: want crashed broker %d in the ELR", seenStrict.ISR, seenStrict.ELR, labStrict.ELR, victim)
	}
	evs, _ := o.Bus().Since(before.Seq, 0)
	if !sameState(replay(before, evs), after) {
		t.Fatalf("events %+v do not take the picture across the crash", evs)
	}
}

// logFilesSize is the bytes of the .log segment files under a broker's
// log dir.
func logFilesSize(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func sortedCopy(s []int32) []int32 { return slices.Sorted(slices.Values(s)) }

func itoa(v int32) string { return strconv.Itoa(int(v)) }

func ints(v []int32) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, itoa(x))
	}
	return strings.Join(parts, ",")
}

// TestObserveTLS: kfake serving TLS with a certificate made here; the
// observer trusting its CA reads it, one trusting nothing else fails.
func TestObserveTLS(t *testing.T) {
	serverCfg, pool := selfSigned(t)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.TLS(serverCfg))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	o := newObserver(t, Options{Seeds: kc.ListenAddrs(), TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}})
	if err := o.Poll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	snap := o.Snapshot()
	if snap.Topic("t") == nil {
		t.Fatalf("topics over TLS: %+v", snap.Topics)
	}
	if un := strings.Join(o.Info().Unavailable, "; "); strings.Contains(un, "DescribeTopicPartitions") {
		t.Fatalf("kfake answers DescribeTopicPartitions (ELR), yet: %s", un)
	}
	untrusting := newObserver(t, Options{Seeds: kc.ListenAddrs(), TLS: &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12},
		Timeout: 3 * time.Second})
	if err := untrusting.Poll(ctxT(t)); err == nil {
		t.Fatal("a certificate from an unknown CA was accepted")
	}
}

// selfSigned returns a server TLS config for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tidemark test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}, MinVersion: tls.VersionTLS12}, pool
}
