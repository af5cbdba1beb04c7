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
	b.mu.Unlock()

	assigned := map[storage.TopicPartition]bool{}
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
			r, err := b.ensureReplica(tp, tc, t.Configs)
			if err != nil {
				b.logger.Error("opening replica", "partition", tp, "err", err)
				continue
			}
			r.apply(p, tc, t.Configs)
		}
	}
	b.mu.Lock()
	var gone []*replica
	for tp, r := range b.replicas {
		if !assigned[tp] {
			gone = append(gone, r)
			delete(b.replicas, tp)
		}
	}
	b.mu.Unlock()
	for _, r := range gone {
		r.stop()
		if err := b.dir.DeleteLog(r.tp); err != nil {
			b.logger.Error("deleting the log of a deleted topic", "partition", r.tp, "err", err)
		}
	}
	b.updateFetchers(md)
	b.reportLogs(md)
}

func (b *Broker) ensureReplica(tp storage.TopicPartition, tc controller.TopicConfig, configs map[string]string) (*replica, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return nil, storage.ErrClosed
	}
	if r, ok := b.replicas[tp]; ok {
		return r, nil
	}
	r, err := b.newReplica(tp, tc, configs)
	if err != nil {
		return nil, err
	}
	b.replicas[tp] = r
	return r, nil
}

// sendAlterPartition sends an ISR proposal to the controller and hands the
// answer to the replication rules. If the controller cannot be reached the
// proposal stays in flight; the rules keep the maximal ISR meanwhile.
func (b *Broker) sendAlterPartition(r *replica, req replication.AlterPartitionRequest) {
	resp, err := b.cfg.Controller.AlterPartition(r.tp.Topic, r.tp.Partition, b.cfg.ID, b.BrokerEpoch(), req)
	if err != nil {
		b.logger.Debug("AlterPartition not delivered", "partition", r.tp, "err", err)
		r.mu.Lock()
		r.pendingAlter = &req
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	r.pendingAlter = nil
	if r.stopped {
		r.mu.Unlock()
		return
	}
	if err := r.rp.AlterPartitionResponse(resp); err != nil && !errors.Is(err, kerr.InvalidRequest) {
		b.logger.Debug("AlterPartition response", "partition", r.tp, "err", err)
	}
	after := r.processReady()
	r.unlock(after)
}
