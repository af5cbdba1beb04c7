package views

import (
	"strconv"
	"strings"

	"tidemark/events"
)

// brokerName renders a broker id, or "none" for events.NoBroker.
func brokerName(id int32) string {
	if id == events.NoBroker {
		return "none"
	}
	return "broker " + strconv.Itoa(int(id))
}

// controllerName names the controller: in the lab it is its own node 0
// (as a KRaft controller is), not one of the brokers.
func controllerName(id int32) string {
	if id == 0 {
		return "node 0 (a dedicated controller, not a broker)"
	}
	return brokerName(id)
}

func id32(v int32) string { return strconv.Itoa(int(v)) }

// idList renders broker ids as "1, 2, 3"; "none" when empty.
func idList(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ", ")
}

func stateGlyph(st events.BrokerState) string {
	switch st {
	case events.BrokerUp:
		return "●"
	case events.BrokerCrashed:
		return "✕"
	case events.BrokerFenced:
		return "▲"
	}
	return "?"
}

// underReplicated counts partitions with a leader and an ISR smaller than the
// replica set; offline partitions are counted by offline instead, as Kafka's
// UnderReplicatedPartitions metric (reported by leaders) does.
func underReplicated(t events.Topic) (n int) {
	for i := range t.Partitions {
		if p := &t.Partitions[i]; !p.Offline() && p.UnderReplicated() {
			n++
		}
	}
	return n
}

func offline(t events.Topic) (n int) {
	for i := range t.Partitions {
		if t.Partitions[i].Offline() {
			n++
		}
	}
	return n
}
