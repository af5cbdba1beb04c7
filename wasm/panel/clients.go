package panel

import (
	"strings"

	"tidemark/events"
)

// MaxClientRows is how many client activities the stage lists.
const MaxClientRows = 8

// Clients is what the stage knows of external Kafka clients (kcat,
// franz-go, …): for each client id and partition, what it last produced
// or where it last fetched, newest first. Consumers show their position,
// the HW they may read up to and their lag, so a learner sees a consumer
// stop at the HW. The UI's own producer has its node and is left out.
type Clients struct {
	rows []ClientRow
}

// ClientRow is one client's latest activity on one partition.
type ClientRow struct {
	Client    string
	Kind      events.Kind // KindProduceRequest or KindClientFetch
	Broker    int32
	Topic     string
	Partition int32
	Records   int
	Acks      events.Acks
	Offset    int64 // a fetch's position
	HW        int64
	Seq       uint64
}

// UIClient is the client id of the lab's own producer.
const UIClient = "tidemark-ui"

// Observe records the client activity among evs.
func (cs *Clients) Observe(evs []events.Event) {
	for _, e := range evs {
		w := e.Wire
		if w == nil || w.Client == UIClient || e.Kind != events.KindProduceRequest && e.Kind != events.KindClientFetch {
			continue
		}
		r := ClientRow{Client: w.Client, Kind: e.Kind, Broker: e.Broker, Topic: e.Topic, Partition: e.Partition,
			Records: w.Records, Acks: e.Acks, Offset: w.FetchOffset, HW: w.HW, Seq: e.Seq}
		// The newest first; one row per client, kind and partition.
		for i, old := range cs.rows {
			if old.Client == r.Client && old.Kind == r.Kind && old.Topic == r.Topic && old.Partition == r.Partition {
				cs.rows = append(cs.rows[:i], cs.rows[i+1:]...)
				break
			}
		}
		cs.rows = append([]ClientRow{r}, cs.rows...)
		if len(cs.rows) > MaxClientRows {
			cs.rows = cs.rows[:MaxClientRows]
		}
	}
}

// Rows returns the activities, newest first.
func (cs *Clients) Rows() []ClientRow { return cs.rows }

// HTML returns the list items of the stage's clients list ("" while no
// client was seen, so the page keeps its hint).
func (cs *Clients) HTML(c Catalog) string {
	var b strings.Builder
	for _, r := range cs.rows {
		name := r.Client
		if name == "" {
			name = c.T("stage.client.noid")
		}
		tp := r.Topic + "-" + itoa(r.Partition)
		var what, cls string
		if r.Kind == events.KindProduceRequest {
			cls = "producer"
			key := "stage.client.produce.other" // i18n.Plural, without bringing i18n into the panel
			if r.Records == 1 {
				key = "stage.client.produce.one"
			}
			what = c.T(key, r.Records, tp, string(r.Acks), r.Broker)
		} else {
			cls = "consumer"
			lag := max(0, r.HW-r.Offset)
			what = c.T("stage.client.fetch", tp, r.Offset, r.HW, lag, r.Broker)
			if lag == 0 {
				cls += " at-hw"
				what += " " + c.T("stage.client.athw")
			}
		}
		b.WriteString(`<li class="` + cls + `" data-client="` + esc(r.Client) + `" data-kind="` + esc(string(r.Kind)) + `" data-topic="` + esc(r.Topic) +
			`" data-partition="` + itoa(r.Partition) + `" data-offset="` + i64(r.Offset) + `" data-hw="` + i64(r.HW) + `"><strong>` + esc(name) +
			`</strong> ` + esc(what) + `</li>`)
	}
	return b.String()
}
