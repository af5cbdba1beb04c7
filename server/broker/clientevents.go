package broker

import (
	"tidemark/events"
	"tidemark/server/wire"
	"tidemark/storage"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientID is the request's client id, or "" when it sent none.
func clientID(rc *wire.RequestContext) string {
	if rc == nil || rc.Header.ClientID == nil {
		return ""
	}
	return *rc.Header.ClientID
}

// publishProduceRequest reports an external client's Produce, one message
// event per partition, so the stage shows who writes what (the lab rate-
// limits message events; the UI's own producer is reported by the cluster).
func (b *Broker) publishProduceRequest(rc *wire.RequestContext, req *kmsg.ProduceRequest) {
	if !b.wantsMessages() {
		return
	}
	client := clientID(rc)
	var evs []events.Event
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n := 0
			for _, h := range storage.ScanBatchHeaders(p.Records) {
				n += int(h.NumRecords)
			}
			evs = append(evs, events.Event{Kind: events.KindProduceRequest, Broker: b.cfg.ID, Topic: t.Topic, Partition: p.Partition,
				Acks: events.AcksOf(req.Acks), Wire: &events.Wire{From: events.NoBroker, To: b.cfg.ID, Client: client, Records: n}})
		}
	}
	b.publish(evs...)
}

// publishClientFetch reports a consumer's answered Fetch, one message event
// per partition this broker hosts that it read (in a fetch session, also
// those the request left out): where it read from, the HW it may read up
// to, and how far behind it is. Followers' fetches are reported by their
// fetchers.
func (b *Broker) publishClientFetch(rc *wire.RequestContext, replicaID int32, parts []sessionPart) {
	if replicaID >= 0 {
		return
	}
	due := b.messagesDue(events.KindClientFetch, b.cfg.ID, events.NoBroker, len(parts))
	if due == 0 {
		return
	}
	client := clientID(rc)
	var evs []events.Event
	for _, p := range parts {
		if len(evs) == due {
			break
		}
		r := b.replicaFor(p.topic, p.req.Partition)
		if r == nil {
			continue
		}
		hw := r.HighWatermark()
		evs = append(evs, events.Event{Kind: events.KindClientFetch, Broker: b.cfg.ID, Topic: p.topic, Partition: p.req.Partition,
			Wire: &events.Wire{From: b.cfg.ID, To: events.NoBroker, Client: client, FetchOffset: p.req.FetchOffset, HW: hw,
				Records: int(max(0, hw-p.req.FetchOffset))}})
	}
	b.publish(evs...)
}
