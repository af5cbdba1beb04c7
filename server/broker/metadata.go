package broker

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

var errStaleBrokerEpoch = kerr.StaleBrokerEpoch

func brokerLive(md controller.Metadata, id int32) bool {
	for _, b := range md.Brokers {
		if b.ID == id {
			return !b.Fenced
		}
	}
	return false
}

// RefreshMetadata reads the controller's metadata and applies it: logs and
// replication state for every partition assigned here, LeaderAndIsr for
// each, topic configs, logs of deleted topics removed, and the fetchers
// rearranged to follow the current leaders.
//
// This is the one place a broker applies metadata: applyMu serializes it,
// and the version check and the whole apply happen under it, so versions
// are applied in order and an older one can never undo a newer one.
func (b *Broker) RefreshMetadata() {
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		return
	}
	b.mu.Lock()
	if b.stopped || md.Version < b.metadataVersion {
		b.mu.Unlock()
		return
	}
	b.metadata, b.metadataVersion = md, md.Version
	// Every fetch round and Fetch request maps topic ids and names: build
	// the maps once here rather than per request.
	b.topicIDsByName = make(map[string][16]byte, len(md.Topics))
	b.topicNamesByID = make(map[[16]byte]string, len(md.Topics))
	for _, t := range md.Topics {
		b.topicIDsByName[t.Name], b.topicNamesByID[t.ID] = t.ID, t.Name
	}
	b.mu.Unlock()

	assigned := map[storage.TopicPartition]bool{}
	var hosted []hostedPartition
	for _, t := range md.Topics {
		tc, err := controller.ParseTopicConfig(t.Configs)
		if err != nil {
			b.logger.Error("topic config from the controller", "topic", t.Name, "err", err)
			continue
		}
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, b.cfg.ID) {
				continue
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
			assigned[tp] = true
			hosted = append(hosted, hostedPartition{tp: tp, p: p, tc: tc, configs: t.Configs})
		}
	}
	b.createReplicas(hosted)
	for _, h := range hosted {
		if r := b.replicaFor(h.tp.Topic, h.tp.Partition); r != nil {
			r.apply(h.p, h.tc, h.configs)
		}
	}
	b.mu.Lock()
	var gone []*replica
	for tp, r := range b.replicas {
		if !assigned[tp] {
			gone = append(gone, r)
			delete(b.replicas, tp)
			b.sorted = nil
		}
	}
	b.mu.Unlock()
	tps := make([]storage.TopicPartition, 0, len(gone))
	for _, r := range gone {
		r.stop()
		tps = append(tps, r.tp)
	}
	if err := b.dir.DeleteLogs(tps); err != nil {
		b.errLog.log("deleting the logs of deleted topics", "partitions", len(tps), "err", err)
	}
	b.updateFetchers(md)
	b.reportLogs(md)
}

// hostedPartition is one partition the metadata assigns to this broker.
type hostedPartition struct {
	tp      storage.TopicPartition
	p       controller.Partition
	tc      controller.TopicConfig
	configs map[string]string
}

// createReplicas creates the replicas (and logs) this broker does not have
// yet, without holding b.mu: a topic of a thousand partitions is a thousand
// directories, and the broker keeps serving its other partitions meanwhile.
// One at a time: creating directories in the same parent does not overlap
// (parallel creation measured slower). Called with applyMu held, so no one
// else adds replicas.
func (b *Broker) createReplicas(hosted []hostedPartition) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	var missing []hostedPartition
	for _, h := range hosted {
		if _, ok := b.replicas[h.tp]; !ok {
			missing = append(missing, h)
		}
	}
	b.mu.Unlock()
	created := make([]*replica, 0, len(missing))
	for _, h := range missing {
		r, err := b.newReplica(h.tp, h.tc, h.configs, h.p.Replicas)
		if err != nil {
			if !errors.Is(err, storage.ErrClosed) {
				b.errLog.log("opening replica", "partition", h.tp, "err", err)
			}
			continue
		}
		created = append(created, r)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range created {
		if r == nil {
			continue
		}
		if b.stopped {
			r.stop() // the log dir's close takes its log
			continue
		}
		b.replicas[r.tp] = r
		b.sorted = nil
	}
}

// sendAlterPartition sends an ISR proposal to the controller and hands the
// answer to the replication rules with the proposal it answers (the rules
// ignore a late answer to a proposal they no longer have in flight). If the
// controller cannot be reached the proposal stays in flight; the rules keep
// the maximal ISR meanwhile. Proposals are numbered in order, so a late
// call for an older one never takes or clears a newer one's place in
// pendingAlter.
func (b *Broker) sendAlterPartition(r *replica, req replication.AlterPartitionRequest) {
	resp, err := b.cfg.Controller.AlterPartition(r.tp.Topic, r.tp.Partition, b.cfg.ID, b.BrokerEpoch(), req)
	if err != nil {
		b.logger.Debug("AlterPartition not delivered", "partition", r.tp, "err", err)
		r.mu.Lock()
		if r.pendingAlter == nil || r.pendingAlter.Proposal < req.Proposal {
			r.pendingAlter = &req
		}
		r.mu.Unlock()
		b.tickBy(b.nowMs() + b.cfg.TickInterval.Milliseconds()) // a tick retries it
		return
	}
	r.mu.Lock()
	if r.pendingAlter != nil && r.pendingAlter.Proposal <= req.Proposal {
		r.pendingAlter = nil
	}
	if r.stopped {
		r.mu.Unlock()
		return
	}
	if err := r.rp.AlterPartitionResponse(req, resp); err != nil && !errors.Is(err, kerr.InvalidRequest) {
		b.logger.Debug("AlterPartition response", "partition", r.tp, "err", err)
	}
	after := r.processReady()
	r.unlock(after)
}
