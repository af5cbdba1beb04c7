package controller

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/fds"
)

// FilesPerReplica is about how many file descriptors one partition replica
// keeps open: the .log, .index and .timeindex of its active segment.
const FilesPerReplica = 3

// Inputs of DefaultMaxPartitionReplicas.
const (
	// reservedFiles is what the budget leaves for everything but replicas'
	// segments: Kafka connections (up to max.connections.per.ip, 500, on
	// each of up to 7 listeners), the web server's, badger's and the
	// checkpoints'. A process with fewer descriptors keeps half for them.
	reservedFiles = 4096
	// bytesPerReplica is what the budget assumes one replica costs in
	// memory (buffers, index entries, the UI's lanes); the budget spends at
	// most a quarter of the machine's memory on replicas.
	bytesPerReplica = 1 << 20
	// minReplicas keeps the budget usable on a tiny machine: the demo topic
	// and a lesson fit.
	minReplicas = 64
)

// maxPartitionReplicas is the budget in force; 0 means the default. It is
// the process's, as the descriptors are: every lab in the process (the main
// cluster and each lesson's) applies it to its own topics.
var maxPartitionReplicas atomic.Int64

// SetMaxPartitionReplicas sets the most partition replicas (partitions ×
// replication factor, over all topics) a lab may hold, the
// --max-partition-replicas flag; n ≤ 0 goes back to
// DefaultMaxPartitionReplicas. It applies to topics created afterwards.
func SetMaxPartitionReplicas(n int) {
	maxPartitionReplicas.Store(int64(max(n, 0)))
}

// MaxPartitionReplicas returns the partition-replica budget in force.
func MaxPartitionReplicas() int {
	if n := maxPartitionReplicas.Load(); n > 0 {
		return int(n)
	}
	return DefaultMaxPartitionReplicas()
}

// DefaultMaxPartitionReplicas computes the budget from the machine: the
// process's descriptor limit (RLIMIT_NOFILE) less what other files need,
// divided by FilesPerReplica, and at most a quarter of physical memory at
// 1 MiB per replica; never below 64. With 20,000 descriptors and plenty of
// memory that is 5,301 replicas: 1,767 topics of replication factor 3.
func DefaultMaxPartitionReplicas() int {
	files, memory := machineLimits()
	return replicaBudget(files, memory)
}

// replicaBudget is DefaultMaxPartitionReplicas for given limits; 0 means
// unknown.
func replicaBudget(files, memory uint64) int {
	budget := descriptorBudget(files)
	if memory > 0 {
		budget = min(budget, memory/4/bytesPerReplica)
	}
	return int(max(budget, minReplicas))
}

// descriptorBudget is how many replicas the descriptors left after
// reservedFiles can keep open; files 0 means unknown (8,192 assumed).
func descriptorBudget(files uint64) uint64 {
	if files == 0 {
		files = 2 * reservedFiles
	}
	return (files - min(reservedFiles, files/2)) / FilesPerReplica
}

// minBrokerPartitions keeps the per-broker budget usable on a tiny
// machine: a lesson's topics fit on one broker.
const minBrokerPartitions = 32

// maxBrokerPartitions is the per-broker budget in force; 0 means the
// default.
var maxBrokerPartitions atomic.Int64

// SetMaxBrokerPartitions sets the most partition replicas one broker may
// host (Kafka's max.broker.partitions, KIP-578), the
// --max-broker-partitions flag; n ≤ 0 goes back to
// DefaultMaxBrokerPartitions. It applies to topics created afterwards.
func SetMaxBrokerPartitions(n int) {
	maxBrokerPartitions.Store(int64(max(n, 0)))
}

// MaxBrokerPartitions returns the per-broker budget in force for a lab of
// the given number of brokers.
func MaxBrokerPartitions(brokers int) int {
	if n := maxBrokerPartitions.Load(); n > 0 {
		return int(n)
	}
	return DefaultMaxBrokerPartitions(brokers)
}

// DefaultMaxBrokerPartitions computes the per-broker budget from the
// descriptor limit: the lab's brokers share one process, so each gets an
// even share of the descriptors left for replicas, as if it ran alone
// with that limit; never below 32. With 20,000 descriptors and 3 brokers
// that is 1,767 replicas a broker. Replicas keep only their active
// segment's files open (storage.Options.IdleFileTimeout), so the share
// bounds descriptors whatever the segment count.
func DefaultMaxBrokerPartitions(brokers int) int {
	files, _ := machineLimits()
	return brokerBudget(files, brokers)
}

// brokerBudget is DefaultMaxBrokerPartitions for a given descriptor limit
// (0: unknown).
func brokerBudget(files uint64, brokers int) int {
	return int(max(descriptorBudget(files)/uint64(max(brokers, 1)), minBrokerPartitions))
}

// checkBrokerBudget refuses (POLICY_VIOLATION) a new topic whose assigned
// replicas would take a broker past the per-broker budget; c.mu is held.
func (c *Controller) checkBrokerBudget(name string, parts []*Partition) error {
	held := map[int32]int{}
	for _, t := range c.topics {
		for _, p := range t.parts {
			for _, r := range p.Replicas {
				held[r]++
			}
		}
	}
	want := map[int32]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			want[r]++
		}
	}
	limit := MaxBrokerPartitions(len(c.brokers))
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if held[id]+want[id] > limit {
			return &BudgetError{Key: "limits.broker-partitions", Args: itoas(name, want[id], int(id), held[id], limit),
				err: fmt.Errorf("%w: topic %q would put %d partition replicas on broker %d, which hosts %d of at most %d "+
					"(--max-broker-partitions, max.broker.partitions in Kafka)",
					kerr.PolicyViolation, name, want[id], id, held[id], limit)}
		}
	}
	return nil
}

// checkReplicaBudget refuses (POLICY_VIOLATION) a new topic of partitions ×
// replicationFactor replicas that would take the lab past the budget; c.mu
// is held.
func (c *Controller) checkReplicaBudget(name string, partitions int32, replicationFactor int16) error {
	held := 0
	for _, t := range c.topics {
		held += len(t.parts) * t.replicationFactor()
	}
	if fds.AtLeast(fds.RefuseTopics) {
		// The process's descriptor account is short: sealed segments were
		// closed and connections refused first; topics come last.
		open, files := fds.InUse()
		return &BudgetError{Key: "limits.descriptors", Args: itoas(name, open, int(files)),
			err: fmt.Errorf("%w: topic %q refused: the process has %d of %d file descriptors open; topics are refused until some are given back",
				kerr.PolicyViolation, name, open, files)}
	}
	want := int(partitions) * int(replicationFactor)
	limit := MaxPartitionReplicas()
	if held+want <= limit {
		return nil
	}
	return &BudgetError{Key: "limits.partition-replicas", Args: itoas(name, want, held, limit),
		err: fmt.Errorf("%w: topic %q needs %d partition replicas (%d partitions × replication factor %d); the lab holds %d of at most %d "+
			"(--max-partition-replicas; each replica keeps about %d files open)",
			kerr.PolicyViolation, name, want, partitions, replicationFactor, held, limit, FilesPerReplica)}
}

// BudgetError is a topic refused by a partition budget: POLICY_VIOLATION
// (errors.Is finds it) naming the limit and its flag, with the i18n key
// and arguments that say the same to a learner in their language.
type BudgetError struct {
	Key  string   // limits.partition-replicas, limits.broker-partitions or limits.descriptors
	Args []string // the key's arguments, in its English order
	err  error
}

func (e *BudgetError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped kerr.PolicyViolation.
func (e *BudgetError) Unwrap() error { return e.err }

// MessageKey returns the i18n key and arguments of the refusal.
func (e *BudgetError) MessageKey() (string, []string) { return e.Key, e.Args }

// itoas formats a topic name and counts as a BudgetError's arguments.
func itoas(name string, n ...int) []string {
	out := []string{name}
	for _, v := range n {
		out = append(out, strconv.Itoa(v))
	}
	return out
}
