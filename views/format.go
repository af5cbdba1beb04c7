package views

import (
	"sort"
	"strconv"
	"strings"

	"tidemark/apiv1"
	"tidemark/events"
)

// maxLabelValue is how many bytes of a record's value a cell's label shows.
const maxLabelValue = 200

// brokerName renders a broker id, or "none" for events.NoBroker.
func (p Page) brokerName(id int32) string {
	if id == events.NoBroker {
		return p.t("ui.none")
	}
	return p.t("ui.broker.n", id)
}

// leaderName names a partition's leader: none is "none (offline)", as
// the live panel's lanes say it (panel.nobroker).
func (p Page) leaderName(id int32) string {
	if id == events.NoBroker {
		return p.t("panel.nobroker")
	}
	return p.brokerName(id)
}

// controllerName names the controller: in the lab it is its own node 0
// (as a KRaft controller is), not one of the brokers.
func (p Page) controllerName(id int32) string {
	if id == 0 {
		return p.t("ui.controller.node0")
	}
	return p.brokerName(id)
}

// stateWord is a broker state in the page's language.
func (p Page) stateWord(st events.BrokerState) string {
	switch st {
	case events.BrokerUp, events.BrokerCrashed, events.BrokerFenced:
		return p.t("ui.state." + string(st))
	}
	return string(st)
}

// idList renders broker ids as "1, 2, 3"; "none" when empty.
func (p Page) idList(ids []int32) string {
	if len(ids) == 0 {
		return p.t("ui.none")
	}
	return joinIDs(ids)
}

func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ", ")
}

func id32(v int32) string { return strconv.Itoa(int(v)) }
func i64(v int64) string  { return strconv.FormatInt(v, 10) }

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

// epochClass picks one of eight colour classes for a leader epoch; the
// epoch number is always printed next to it, so colour is never alone.
func epochClass(epoch int32) string {
	if epoch < 0 {
		epoch = -epoch
	}
	return "ep" + strconv.Itoa(int(epoch%8))
}

func partitionURL(topic string, partition int32) string {
	return "/topics/" + topic + "/partitions/" + id32(partition)
}

func segmentsURL(broker int32, topic string, partition int32) string {
	return "/brokers/" + id32(broker) + "/partitions/" + topic + "/" + id32(partition) + "/segments"
}

// configSummary renders a topic's explicitly set configs as "k=v, …";
// "-" when it sets none (all defaults).
func configSummary(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}

// bytes renders a file size; -1 (not on disk yet) says so.
func (p Page) bytes(n int64) string {
	if n < 0 {
		return p.t("ui.bytes.none")
	}
	return p.t("ui.bytes", n)
}

// probe describes one comparison of a binary search.
func (p Page) probe(pr apiv1.ProbeView) string {
	if pr.Below {
		return p.t("ui.lookup.probe.below", pr.Index, pr.Key)
	}
	return p.t("ui.lookup.probe.above", pr.Index, pr.Key)
}

// boolText is v as an HTML attribute value ("true" or "false").
func boolText(v bool) string { return strconv.FormatBool(v) }

// fencingRules are the controller's fencing rules as the controls list
// them: the releases newest first, the lab-only one last (controller.
// FencingRules, which views does not import).
var fencingRules = []string{"kraft-elr", "kraft", "zookeeper", "zookeeper-pre-2.2", "kraft-elr-recovery"}
