package observe

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"

	"tidemark/events"
	"tidemark/i18n"
)

// poll is what one Poll read.
type poll struct {
	md      kadm.Metadata
	starts  kadm.ListedOffsets
	ends    kadm.ListedOffsets
	configs map[string]map[string]string
	elr     map[string]map[int32][]int32
	logDirs kadm.DescribedAllLogDirs
	info    Info
}

// snapshot builds the Snapshot the poll saw. A broker that was seen
// before and is no longer in the metadata stays, as crashed: a Kafka
// cluster's metadata names only the brokers it can reach.
func (p *poll) snapshot(prev *events.Snapshot) events.Snapshot {
	s := events.Snapshot{Controller: p.md.Controller, Observed: true}
	seen := map[int32]bool{}
	for _, b := range p.md.Brokers {
		s.Brokers = append(s.Brokers, events.Broker{ID: b.NodeID, State: events.BrokerUp,
			Listener: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))})
		seen[b.NodeID] = true
	}
	for _, b := range prev.Brokers {
		if !seen[b.ID] {
			b.State = events.BrokerCrashed
			s.Brokers = append(s.Brokers, b)
		}
	}
	sort.Slice(s.Brokers, func(i, j int) bool { return s.Brokers[i].ID < s.Brokers[j].ID })

	names := p.md.Topics.Names()
	sort.Strings(names)
	for _, name := range names {
		td := p.md.Topics[name]
		if td.Err != nil {
			continue
		}
		t := events.Topic{Name: name, Configs: p.configs[name]}
		for _, pd := range td.Partitions.Sorted() {
			t.Partitions = append(t.Partitions, p.partition(name, pd))
		}
		s.Topics = append(s.Topics, t)
	}
	return s
}

// partition is one partition as the poll saw it. Every replica gets the
// partition's HW (followers' own HWs are not reported) and a LEO of the HW
// less its OffsetLag; without DescribeLogDirs, the HW.
func (p *poll) partition(topic string, pd kadm.PartitionDetail) events.Partition {
	part := events.Partition{Partition: pd.Partition, Leader: pd.Leader, LeaderEpoch: pd.LeaderEpoch,
		Replicas: slices.Clone(pd.Replicas), ISR: slices.Clone(pd.ISR), ELR: slices.Clone(p.elr[topic][pd.Partition])}
	if part.Leader < 0 {
		part.Leader = events.NoBroker
	}
	hw, start := int64(0), int64(0)
	if o, ok := p.ends.Lookup(topic, pd.Partition); ok && o.Err == nil {
		hw = o.Offset
	}
	if o, ok := p.starts.Lookup(topic, pd.Partition); ok && o.Err == nil {
		start = o.Offset
	}
	for _, b := range pd.Replicas {
		r := events.Replica{Broker: b, HW: hw, LEO: hw, LogStartOffset: start}
		for _, d := range p.logDirs[b] {
			if lp, ok := d.Topics.Lookup(topic, pd.Partition); ok && !lp.IsFuture {
				r.LEO = max(hw-lp.OffsetLag, start)
			}
		}
		r.HW = min(r.HW, r.LEO)
		part.ReplicaLogs = append(part.ReplicaLogs, r)
	}
	return part
}

// diff returns the events that take prev to next, in the kinds
// Snapshot.Apply knows; a topic whose partitions or replicas changed in a
// way no event kind says is published whole (KindTopic replaces it).
func diff(prev, next *events.Snapshot) []events.Event {
	var evs []events.Event
	for _, b := range next.Brokers {
		if old := prev.Broker(b.ID); old == nil || *old != b {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindBroker, Broker: b.ID, BrokerState: b.State, Listener: b.Listener},
				"event.observe.broker", b.ID, i18n.Word("event.word.state."+string(b.State)), b.Listener))
		}
	}
	for _, t := range prev.Topics {
		if next.Topic(t.Name) == nil {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: t.Name}, "event.topic.deleted", t.Name))
		}
	}
	for i := range next.Topics {
		t := &next.Topics[i]
		old := prev.Topic(t.Name)
		if old == nil || !sameShape(old, t) {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: t.Name, TopicCreated: t},
				i18n.Plural("event.observe.topic", len(t.Partitions)), t.Name, len(t.Partitions)))
			continue
		}
		evs = append(evs, configEvents(t.Name, old.Configs, t.Configs)...)
		for j := range t.Partitions {
			evs = append(evs, partitionEvents(t.Name, &old.Partitions[j], &t.Partitions[j])...)
		}
	}
	return evs
}

// sameShape reports whether a and b have the same partitions with the
// same replicas and log start offsets: what only a whole topic carries.
func sameShape(a, b *events.Topic) bool {
	if len(a.Partitions) != len(b.Partitions) {
		return false
	}
	for i := range a.Partitions {
		pa, pb := &a.Partitions[i], &b.Partitions[i]
		if pa.Partition != pb.Partition || !slices.Equal(pa.Replicas, pb.Replicas) || len(pa.ReplicaLogs) != len(pb.ReplicaLogs) {
			return false
		}
		for k := range pa.ReplicaLogs {
			if pa.ReplicaLogs[k].Broker != pb.ReplicaLogs[k].Broker || pa.ReplicaLogs[k].LogStartOffset != pb.ReplicaLogs[k].LogStartOffset {
				return false
			}
		}
	}
	return true
}

func configEvents(topic string, old, cur map[string]string) []events.Event {
	var evs []events.Event
	keys := slices.Sorted(maps.Keys(cur))
	for _, k := range keys {
		if prev, ok := old[k]; !ok || prev != cur[k] {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindConfig, Broker: events.NoBroker, Topic: topic,
				Config: &events.ConfigChange{Key: k, Value: cur[k], Previous: prev}}, "event.observe.config", topic, k, cur[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if _, ok := cur[k]; !ok {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindConfig, Broker: events.NoBroker, Topic: topic,
				Config: &events.ConfigChange{Key: k, Previous: old[k]}}, "event.observe.config.default", topic, k))
		}
	}
	return evs
}

func partitionEvents(topic string, old, cur *events.Partition) []events.Event {
	var evs []events.Event
	tp := fmt.Sprintf("%s-%d", topic, cur.Partition)
	switch {
	case old.Leader != cur.Leader || old.LeaderEpoch != cur.LeaderEpoch:
		evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindElection, Broker: cur.Leader, Topic: topic, Partition: cur.Partition,
			Leader: &events.Leadership{Leader: cur.Leader, PreviousLeader: old.Leader, LeaderEpoch: cur.LeaderEpoch},
			ISR:    slices.Clone(cur.ISR), ELR: slices.Clone(cur.ELR)},
			"event.observe.election", tp, cur.Leader, cur.LeaderEpoch, cur.ISR))
	case !slices.Equal(old.ISR, cur.ISR) || !slices.Equal(old.ELR, cur.ELR):
		evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindISR, Broker: cur.Leader, Topic: topic, Partition: cur.Partition,
			ISR: slices.Clone(cur.ISR), ELR: slices.Clone(cur.ELR)}, "event.observe.isr", tp, cur.ISR, cur.ELR))
	}
	for k := range cur.ReplicaLogs {
		o, r := &old.ReplicaLogs[k], &cur.ReplicaLogs[k]
		// LEO before HW: Apply's LEO event does not touch the HW.
		if o.LEO != r.LEO {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindLEO, Broker: r.Broker, Topic: topic, Partition: cur.Partition,
				Offsets: &events.Offsets{LEO: r.LEO}}, "event.observe.leo", tp, r.Broker, r.LEO))
		}
		if o.HW != r.HW {
			evs = append(evs, i18n.EventMessage(events.Event{Kind: events.KindHW, Broker: r.Broker, Topic: topic, Partition: cur.Partition,
				Offsets: &events.Offsets{HW: r.HW}}, "event.observe.hw", tp, r.Broker, r.HW))
		}
	}
	return evs
}
