package controller

import (
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
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
	if files == 0 {
		files = 2 * reservedFiles
	}
	budget := (files - min(reservedFiles, files/2)) / FilesPerReplica
	if memory > 0 {
		budget = min(budget, memory/4/bytesPerReplica)
	}
	return int(max(budget, minReplicas))
}

// checkReplicaBudget refuses (POLICY_VIOLATION) a new topic of partitions ×
// replicationFactor replicas that would take the lab past the budget; c.mu
// is held.
func (c *Controller) checkReplicaBudget(name string, partitions int32, replicationFactor int16) error {
	held := 0
	for _, t := range c.topics {
		held += len(t.parts) * t.replicationFactor()
	}
	want := int(partitions) * int(replicationFactor)
	limit := MaxPartitionReplicas()
	if held+want <= limit {
		return nil
	}
	return fmt.Errorf("%w: topic %q needs %d partition replicas (%d partitions × replication factor %d); the lab holds %d of at most %d "+
		"(--max-partition-replicas; each replica keeps about %d files open)",
		kerr.PolicyViolation, name, want, partitions, replicationFactor, held, limit, FilesPerReplica)
}
