package broker

import (
	"errors"
	"maps"
	"slices"
	"strings"

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
// are applied in order and an older one can never undo a newer one. The
// version counts as applied (Heartbeat, Metadata answers) only once the
// apply is done: published at its start, a heartbeat during it returned at
// once and the lab's CreateTopic came back before a broker hosted the
// topic (a class seat's first produce got UNKNOWN_TOPIC_OR_PARTITION).
//
// It applies the change since the last apply, not the whole metadata: a
// partition (and topic config) equal to the one applied before is left
// alone, the topic id maps are the controller's (built once per set of
// topics), and the fetchers are rearranged only when a leader moved, a
// replica came or went or a listener changed. With a thousand topics, a
// change to one of them otherwise rebuilt everything per broker.
func (b *Broker) RefreshMetadata() {
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	for range maxReapplies {
		b.reapply.Store(false)
		b.refreshMetadata()
		if !b.reapply.Load() {
			return
		}
	}
	b.refreshSoon() // still asked: the metadata goroutine goes on
}

// maxReapplies bounds how often one RefreshMetadata applies again for
// reports made inside it (refreshNow): each report is made once per term
// or ISR, so a few suffice.
const maxReapplies = 8

// refreshMetadata is one apply of RefreshMetadata. Callers hold applyMu.
func (b *Broker) refreshMetadata() {
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		return
	}
	b.mu.Lock()
	prev := b.metadata
	if b.stopped || md.Version < b.metadataVersion {
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()

	hosted, moved := b.changedPartitions(prev, md)
	b.createReplicas(hosted)
	for _, h := range hosted {
		if r := b.replicaFor(h.tp.Topic, h.tp.Partition); r != nil {
			r.apply(h.p, h.tc, h.configs)
		}
	}
	b.mu.Lock()
	var gone []*replica
	for tp, r := range b.replicas {
		if !hostedIn(md, tp, b.cfg.ID) {
			gone = append(gone, r)
			delete(b.replicas, tp)
			b.sorted = nil
		}
	}
	// Published once its replicas are there: a heartbeat that finds this
	// version applied (the lab's CreateTopic waits on that) or a client
	// that finds a topic in this broker's Metadata can use it at once.
	b.metadata, b.metadataVersion = md, md.Version
	// Every fetch round and Fetch request maps topic ids and names: the
	// controller's maps, built once per set of topics, not per request.
	b.topicIDsByName, b.topicNamesByID = md.TopicIDs, md.TopicNames
	b.mu.Unlock()
	if len(gone) > 0 {
		tps := make([]storage.TopicPartition, 0, len(gone))
		for _, r := range gone {
			r.stop()
			tps = append(tps, r.tp)
		}
		if err := b.dir.DeleteLogs(tps); err != nil {
			b.errLog.log("deleting the logs of deleted topics", "partitions", len(tps), "err", err)
		}
	}
	b.removeStrays(md)
	if moved || len(gone) > 0 || !slices.EqualFunc(prev.Brokers, md.Brokers, sameListener) {
		b.updateFetchers(md)
	}
	b.reportLogs(md)
}

// removeStrays deletes the logs in the log dir of partitions md does not
// assign to this broker: a topic deleted (or a replica moved away) while
// the broker was down is still on its disk at the next start, where
// nothing else would remove it, holding descriptors and bytes no budget
// counts. Kafka's broker does the same on start and on each metadata
// update (KIP-858, KAFKA-14616: "stray" logs, renamed -stray, then
// deleted). Called with applyMu held, after the replicas md drops were
// stopped, so no replica owns a log it deletes.
func (b *Broker) removeStrays(md controller.Metadata) {
	var strays []storage.TopicPartition
	for _, l := range b.dir.Logs() {
		if tp := l.TopicPartition(); !hostedIn(md, tp, b.cfg.ID) {
			strays = append(strays, tp)
		}
	}
	if len(strays) == 0 {
		return
	}
	b.logger.Info("removing stray logs: partitions the metadata does not assign to this broker",
		"partitions", len(strays), "first", strays[0].String())
	if err := b.dir.DeleteLogs(strays); err != nil {
		b.errLog.log("deleting stray logs", "partitions", len(strays), "err", err)
	}
}

// changedPartitions returns the partitions md assigns to this broker that
// differ from prev (their record or their topic's id or configs) or have
// no replica here yet (new, or one that could not be opened before), and
// whether any of them is new here or has another leader (the fetchers
// follow leaders; an ISR or config change leaves them be).
func (b *Broker) changedPartitions(prev, md controller.Metadata) (hosted []hostedPartition, moved bool) {
	for i := range md.Topics {
		t := &md.Topics[i]
		old := topicIn(prev, t.Name)
		known := old != nil && old.ID == t.ID && len(old.Partitions) == len(t.Partitions)
		same := known && maps.Equal(old.Configs, t.Configs)
		var tc *controller.TopicConfig
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if !slices.Contains(p.Replicas, b.cfg.ID) {
				continue
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
			have := b.replicaFor(tp.Topic, tp.Partition) != nil
			if same && old.Partitions[j].Equal(p) && have {
				continue
			}
			moved = moved || !have || !known || old.Partitions[j].Leader != p.Leader
			if tc == nil {
				c, err := controller.ParseTopicConfig(t.Configs)
				if err != nil {
					b.logger.Error("topic config from the controller", "topic", t.Name, "err", err)
					break
				}
				tc = &c
			}
			hosted = append(hosted, hostedPartition{tp: tp, p: *p, tc: *tc, configs: t.Configs})
		}
	}
	return hosted, moved
}

// topicIn returns md's topic called name (md.Topics is sorted by name), or
// nil.
func topicIn(md controller.Metadata, name string) *controller.Topic {
	i, ok := slices.BinarySearchFunc(md.Topics, name, func(t controller.Topic, name string) int { return strings.Compare(t.Name, name) })
	if !ok {
		return nil
	}
	return &md.Topics[i]
}

// hostedIn reports whether md assigns tp to broker id.
func hostedIn(md controller.Metadata, tp storage.TopicPartition, id int32) bool {
	t := topicIn(md, tp.Topic)
	return t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) && slices.Contains(t.Partitions[tp.Partition].Replicas, id)
}

func sameListener(a, b controller.Broker) bool { return a.ID == b.ID && a.Listener == b.Listener }

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
//
// Over a delayed link the answer comes later, on the lab's goroutine
// (Controller.AlterPartition); the proposal stays in flight meanwhile.
func (b *Broker) sendAlterPartition(s *isrState, req replication.AlterPartitionRequest) {
	r := s.r
	b.cfg.Controller.AlterPartition(r.tp.Topic, r.tp.Partition, b.cfg.ID, b.BrokerEpoch(), req,
		func(resp replication.AlterPartitionResponse, err error) {
			r.drive(func(int) bool { r.proto.altered(req, resp, err); return false })
		})
}
