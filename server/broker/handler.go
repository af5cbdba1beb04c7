package broker

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/server/wire"
	"tidemark/storage"
)

// ClusterID is what Metadata responses name the lab's cluster.
const ClusterID = "tidemark-lab"

// handler serves the Kafka protocol on a broker's listener.
type handler struct{ b *Broker }

// Versions lists exactly the API versions this broker implements.
func (h *handler) Versions() wire.VersionTable {
	t := wire.VersionTable{
		0:  {Min: 3, Max: 11}, // Produce: RecordBatch v2 only
		1:  {Min: 4, Max: 15}, // Fetch: v12 has the leader-epoch fields, v13 topic ids, v15 the follower's broker epoch
		2:  {Min: 1, Max: 7},  // ListOffsets
		3:  {Min: 0, Max: 12}, // Metadata: v0 for kafka-python 2.0.2's version probe
		23: {Min: 2, Max: 4},  // OffsetForLeaderEpoch
	}
	for k, r := range clientAPIVersions { // admin, groups, producer ids: clientapi.go
		t[k] = r
	}
	for k, r := range describeAPIVersions { // log dirs, cluster, ELR: describe.go
		t[k] = r
	}
	return t
}

// Handle serves one request.
func (h *handler) Handle(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		h.b.publishProduceRequest(rc, req)
		var prepared *validatedBatch
		if v, ok := rc.Prepared.(validatedBatch); ok {
			prepared = &v
		}
		return h.b.handleProduce(ctx, req, prepared), nil
	case *kmsg.FetchRequest:
		return h.b.handleFetch(ctx, rc, req), nil
	case *kmsg.ListOffsetsRequest:
		return h.b.handleListOffsets(req), nil
	case *kmsg.MetadataRequest:
		return h.b.handleMetadata(req), nil
	case *kmsg.OffsetForLeaderEpochRequest:
		return h.b.handleOffsetForLeaderEpoch(req), nil
	}
	return h.b.handleClientAPI(ctx, rc, req)
}

func (b *Broker) replicaFor(topic string, partition int32) *replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.replicas[storage.TopicPartition{Topic: topic, Partition: partition}]
}

// Produce appends records to a partition this broker leads, as a Produce
// request does, and waits as acks says. The lab's HTTP API uses it.
func (b *Broker) Produce(ctx context.Context, topic string, partition int32, acks int16, records []byte, timeout time.Duration) ProduceResult {
	r := b.replicaFor(topic, partition)
	if r == nil {
		return refused(kerr.UnknownTopicOrPartition)
	}
	return b.produceValidated(ctx, r, acks, records, validateProduced(records), timeout)
}

// validatedBatch is a produced record set checked by validateProduced.
type validatedBatch struct {
	header storage.BatchHeader
	tail   []storage.DecodedRecord
	err    error
}

// validateProduced checks a produced record set before it may be appended:
// a batch that passes its CRC but does not decode would be replicated and
// stop every reader at its offset. The same pass decodes the newest records
// for the append event.
func validateProduced(records []byte) validatedBatch {
	h, tail, err := storage.ValidateProducedBatchTail(records, events.RecordWindow)
	return validatedBatch{h, tail, err}
}

// Prepare validates a one-partition Produce request's record set on the
// connection's reader goroutine, ahead of its turn (wire.Preparer): while an
// acks=all produce waits for its followers, the producer's next request is
// being checked. The result is its validatedBatch. A request for several
// partitions is left to its handler, which validates them in parallel.
func (h *handler) Prepare(req kmsg.Request) any {
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok || pr.TransactionID != nil || len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return nil
	}
	return validateProduced(pr.Topics[0].Partitions[0].Records)
}

// produceValidated appends records, checked as v says, to r and waits as
// acks says.
func (b *Broker) produceValidated(ctx context.Context, r *replica, acks int16, records []byte, v validatedBatch, timeout time.Duration) ProduceResult {
	if v.err != nil {
		return refused(v.err)
	}
	if timeout <= 0 {
		timeout = b.cfg.RequestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	return r.produce(ctx, acks, records, uiRecords(v.header, v.tail), timeout)
}

// handleProduce serves a Produce request; prepared is what Prepare found
// for a one-partition request (nil: the record sets are validated here).
func (b *Broker) handleProduce(ctx context.Context, req *kmsg.ProduceRequest, prepared *validatedBatch) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	var wg sync.WaitGroup
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// one produces to one partition and fills in its response.
	one := func(out *kmsg.ProduceResponseTopicPartition, i, j int) {
		topic, p := req.Topics[i].Topic, req.Topics[i].Partitions[j]
		res := refused(kerr.UnknownTopicOrPartition)
		out.LogStartOffset = -1
		if r := b.replicaFor(topic, p.Partition); r != nil {
			var v validatedBatch
			if prepared != nil {
				v = *prepared // a one-partition request: i and j are 0
			} else {
				v = validateProduced(p.Records)
			}
			res = b.produceValidated(ctx, r, req.Acks, p.Records, v, timeout)
			out.LogStartOffset = r.log.LogStartOffset()
		}
		out.BaseOffset = res.BaseOffset
		out.LogAppendTime = -1
		if res.Err == nil && res.BaseOffset >= 0 {
			out.LogAppendTime = b.logAppendTime(topic, p.Partition, res.BaseOffset)
		}
		if res.Err != nil {
			out.ErrorCode = errorCode(res.Err)
			out.BaseOffset = -1
			if errors.Is(res.Err, kerr.InvalidRecord) || errors.Is(res.Err, kerr.CorruptMessage) ||
				errors.Is(res.Err, kerr.UnsupportedCompressionType) {
				msg := res.Err.Error() // v8+: the producer learns why
				out.ErrorMessage = &msg
			}
		}
	}
	// Partitions are produced to in parallel; a request for one partition
	// (a producer writing one hot partition) runs on the connection's
	// goroutine, without a hand-off on every request.
	single := len(req.Topics) == 1 && len(req.Topics[0].Partitions) == 1
	for i, t := range req.Topics {
		for j := range t.Partitions {
			out := &resp.Topics[i].Partitions[j]
			if single {
				one(out, i, j)
				continue
			}
			wg.Go(func() { one(out, i, j) })
		}
	}
	wg.Wait()
	// Also with acks=0: the listener never sends it, but closes the
	// connection when any partition failed, which is how Kafka tells such
	// a producer to refresh its metadata.
	return resp
}

// errorCode is the Kafka error code of err.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// checkLeaderEpoch compares a client's current leader epoch with ours:
// older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, -1 skips.
func checkLeaderEpoch(client, ours int32) error {
	switch {
	case client < 0 || client == ours:
		return nil
	case client < ours:
		return kerr.FencedLeaderEpoch
	}
	return kerr.UnknownLeaderEpoch
}

// fetchPart is one partition of a fetch being answered.
type fetchPart struct {
	r      *replica
	req    kmsg.FetchRequestTopicPartition
	out    *kmsg.FetchResponseTopicPartition
	upTo   int64 // read below this: the HW for consumers, the LEO for followers
	waitOn chan struct{}
}

// handleFetch answers a Fetch: every partition it reads (those it names,
// or in a fetch session those the session holds) is checked, the fetch
// waits up to MaxWaitMillis for data when there is none, and the response
// carries the records as file regions, sent with sendfile.
func (b *Broker) handleFetch(ctx context.Context, rc *wire.RequestContext, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID, replicaEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	_, names := b.topicIDs()
	resolveTopicIDs(req, names)
	req.Topics = dedupeFetchTopics(req.Topics)
	targets, sess, errCode := b.sessions.open(req, replicaID, names)
	if errCode != 0 {
		resp.ErrorCode = errCode
		return resp
	}
	// Without a session, or when one starts, every partition is answered;
	// an incremental fetch answers those with news (sessionPart.mustAnswer).
	full := sess == nil || req.SessionEpoch == initialSessionEpoch
	var parts []fetchPart
	var outs []kmsg.FetchResponseTopicPartition
	if sess != nil {
		defer sess.mu.Unlock()
		resp.SessionID = sess.id
		parts, outs = sess.fps[:0], sess.outs[:0]
		defer func() {
			clear(parts) // keep the room, not the replicas and records
			clear(outs)
			sess.fps, sess.outs = parts[:0], outs[:0]
		}()
	}
	// outs never grows after this: parts point into it.
	outs = slices.Grow(outs, len(targets))[:len(targets)]
	nowMs := b.nowMs()
	for i := range targets {
		t := &targets[i]
		out := &outs[i]
		*out = kmsg.NewFetchResponseTopicPartition()
		out.Partition = t.req.Partition
		out.RecordBatches = []byte{} // empty, never null: librdkafka rejects a null record set
		out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
		r := b.replicaFor(t.topic, t.req.Partition)
		if r == nil {
			out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if strings.HasPrefix(t.topic, unknownTopicIDPrefix) { // an id named by resolveTopicIDs or fetchSession.resolve
				out.ErrorCode = kerr.UnknownTopicID.Code
			}
			continue
		}
		parts = append(parts, fetchPart{r: r, req: t.req, out: out})
		fp := &parts[len(parts)-1]
		if replicaID >= 0 {
			b.followerFetchState(fp, replicaID, replicaEpoch, nowMs)
		} else {
			b.consumerFetchState(fp)
		}
		if out.ErrorCode != 0 || out.DivergingEpoch.Epoch >= 0 {
			parts = parts[:len(parts)-1]
		}
	}
	b.waitForData(ctx, parts, time.Duration(req.MaxWaitMillis)*time.Millisecond, replicaID >= 0)
	if replicaID < 0 && req.IsolationLevel == 1 {
		for i := range parts {
			b.readCommitted(&parts[i]) // txn.go: up to the last stable offset
		}
	}
	sp := wire.NewSpliced(resp)
	budget := int64(FetchMaxBytes)
	if req.MaxBytes > 0 {
		budget = min(budget, int64(req.MaxBytes))
	}
	for i := range parts {
		fp := &parts[i]
		if budget <= 0 {
			break // only the first partition with data may go over (one whole batch)
		}
		maxBytes := int64(fp.req.PartitionMaxBytes)
		if maxBytes <= 0 || maxBytes > budget {
			maxBytes = budget
		}
		d, err := fp.r.log.Read(fp.req.FetchOffset, fp.upTo, maxBytes)
		if err != nil {
			fp.out.ErrorCode = errorCode(err)
			continue
		}
		if d.Region.Size > 0 {
			fp.out.RecordBatches = sp.Placeholder(wire.FileRegion{File: d.Region.File, Offset: d.Region.Position, Length: d.Region.Size})
			budget -= d.Region.Size
		}
	}
	for i := range targets {
		t, out := &targets[i], &outs[i]
		if !full && !t.mustAnswer(out) {
			continue
		}
		t.answered, t.hw, t.logStart = true, out.HighWatermark, out.LogStartOffset
		n := len(resp.Topics)
		if n == 0 || resp.Topics[n-1].Topic != t.topic {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.topic, t.topicID
			resp.Topics = append(resp.Topics, rt)
			n++
		}
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, *out)
	}
	b.publishClientFetch(rc, replicaID, targets)
	return sp
}

// waitForData is the long poll: with nothing to send, a fetch waits up to
// maxWait for an append to one of its partitions. A follower waits in lab
// time (a client in its own) until the last multiple of maxWait within it
// (nextOnGrid): the lab's idle followers then are answered in one wake-up,
// with the brokers' heartbeats, instead of each at its own instant; after
// the first such wait each lasts maxWait less the follower's turnaround,
// and replica.fetch.wait.max.ms stays a bound. A follower is answered at
// once when the rate changes: from ¼× to 4× its 2 s wait would last 8 s of
// lab time, past replica.lag.time.max.ms. Afterwards each partition's
// bounds are read again.
func (b *Broker) waitForData(ctx context.Context, parts []fetchPart, maxWait time.Duration, follower bool) {
	maxWait = min(maxWait, b.cfg.FetchMaxWait)
	var rateChanged <-chan struct{} // nil: never
	if follower && maxWait > 0 {
		rateChanged = b.cfg.Clock.RateChanged()
		now := b.cfg.Clock.Now()
		maxWait = b.cfg.Clock.Real(nextOnGrid(now, maxWait).Sub(now))
	}
	if maxWait <= 0 || len(parts) == 0 || anyData(parts) {
		return
	}
	timer := time.NewTimer(maxWait)
	var cases chan struct{}
	if len(parts) == 1 {
		// A fetch of one partition waits on it directly: no channel
		// to make, nothing to register.
		cases = parts[0].waitOn
	} else {
		cases = make(chan struct{}, 1)
		for i := range parts {
			parts[i].r.watch(cases, parts[i].waitOn)
		}
	}
	select {
	case <-cases:
	case <-timer.C:
	case <-rateChanged:
	case <-ctx.Done():
	case <-b.ctx.Done():
	}
	if len(parts) > 1 {
		for i := range parts {
			parts[i].r.unwatch(cases)
		}
	}
	timer.Stop()
	for i := range parts {
		parts[i].refresh(follower)
	}
}

func anyData(parts []fetchPart) bool {
	for i := range parts {
		if parts[i].req.FetchOffset < parts[i].upTo {
			return true
		}
	}
	return false
}

// refresh re-reads the bound, the HW and the LastStableOffset (the HW:
// there are no transactions) after a long poll, as Kafka reads them when a
// delayed fetch completes.
func (fp *fetchPart) refresh(follower bool) {
	fp.r.mu.Lock()
	defer fp.r.mu.Unlock()
	fp.upTo = fp.r.hw
	if follower {
		fp.upTo = fp.r.log.LogEndOffset()
	}
	fp.out.HighWatermark, fp.out.LastStableOffset = fp.r.hw, fp.r.hw
	fp.out.LogStartOffset = fp.r.log.LogStartOffset()
}

// followerFetchState lets the replication rules see a follower's fetch: its
// fetch offset becomes its LEO on the leader, which may move the HW. nowMs
// is the lab time of the request, read once for all its partitions.
func (b *Broker) followerFetchState(fp *fetchPart, replicaID int32, replicaEpoch int64, nowMs int64) {
	r := fp.r
	var res replication.FetchResult
	served := false
	r.drive(func(n int) bool {
		if n > 0 { // what the fetch waits for, once its Ready is applied
			fp.upTo = r.log.LogEndOffset()
			fp.waitOn = r.newData
			return false
		}
		res, served = r.proto.followerFetch(replication.FetchRequest{
			ReplicaID:          replicaID,
			FetchOffset:        fp.req.FetchOffset,
			CurrentLeaderEpoch: fp.req.CurrentLeaderEpoch,
			LastFetchedEpoch:   fp.req.LastFetchedEpoch,
			ReplicaEpoch:       replicaEpoch,
		}, nowMs)
		if served && res.Err == nil {
			r.noteFollowerStart(replicaID, fp.req.LogStartOffset)
		}
		return true
	})
	if !served { // stopped, or a protocol whose replicas do not fetch
		fp.out.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	fp.out.HighWatermark, fp.out.LastStableOffset = res.HighWatermark, res.HighWatermark
	fp.out.LogStartOffset = res.LogStartOffset
	if res.Err != nil {
		fp.out.ErrorCode = errorCode(res.Err)
		return
	}
	if res.DivergingEpoch != nil {
		fp.out.DivergingEpoch.Epoch = res.DivergingEpoch.Epoch
		fp.out.DivergingEpoch.EndOffset = res.DivergingEpoch.EndOffset
	}
}

// consumerFetchState checks a consumer's fetch: only the leader serves it,
// and only below the HW.
func (b *Broker) consumerFetchState(fp *fetchPart) {
	r := fp.r
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.status()
	if st.Role != replication.RoleLeader {
		fp.out.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	if err := checkLeaderEpoch(fp.req.CurrentLeaderEpoch, st.LeaderEpoch); err != nil {
		fp.out.ErrorCode = errorCode(err)
		return
	}
	fp.upTo = r.hw
	fp.waitOn = r.newData
	fp.out.HighWatermark, fp.out.LastStableOffset = r.hw, r.hw
	fp.out.LogStartOffset = r.log.LogStartOffset()
	if fp.req.FetchOffset < fp.out.LogStartOffset || fp.req.FetchOffset > r.log.LogEndOffset() {
		fp.out.ErrorCode = kerr.OffsetOutOfRange.Code
	}
}

func (b *Broker) handleListOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset = -1, -1
			offset, ts, epoch, err := b.listOffset(t.Topic, p.Partition, p.CurrentLeaderEpoch, p.Timestamp, req.ReplicaID >= 0)
			if err == nil && req.IsolationLevel == 1 && p.Timestamp == listLatest && req.ReplicaID < 0 {
				offset, err = b.lastStableOffset(t.Topic, p.Partition, offset) // txn.go: read_committed's end
			}
			if err != nil {
				rp.ErrorCode = errorCode(err)
			} else {
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = offset, ts, epoch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Special ListOffsets timestamps.
const (
	listLatest   = -1
	listEarliest = -2
)

// listOffset answers one ListOffsets partition: latest (the HW for
// consumers, the LEO for a replica), earliest (the log start offset), or the
// first offset at or after a timestamp, found through the time index.
func (b *Broker) listOffset(topic string, partition, currentEpoch int32, ts int64, fromReplica bool) (int64, int64, int32, error) {
	r := b.replicaFor(topic, partition)
	if r == nil {
		return 0, 0, 0, kerr.UnknownTopicOrPartition
	}
	r.mu.Lock()
	st := r.status()
	hw := r.hw
	r.mu.Unlock()
	if st.Role != replication.RoleLeader && !fromReplica {
		return 0, 0, 0, kerr.NotLeaderForPartition
	}
	if err := checkLeaderEpoch(currentEpoch, st.LeaderEpoch); err != nil {
		return 0, 0, 0, err
	}
	// KIP-207: a new leader's HW may still be below the start of its epoch
	// (it learned the old leader's HW a fetch late). Answering with it would
	// move a consumer's end offset backwards, so until the HW passes the
	// epoch start a client's HW-bounded lookups get OFFSET_NOT_AVAILABLE.
	if !fromReplica && ts != listEarliest && st.Role == replication.RoleLeader && hw < st.EpochStartOffset {
		return 0, 0, 0, kerr.OffsetNotAvailable
	}
	limit := hw
	if fromReplica {
		limit = r.log.LogEndOffset()
	}
	switch ts {
	case listLatest:
		return limit, -1, st.LeaderEpoch, nil
	case listEarliest:
		return r.log.LogStartOffset(), -1, st.LeaderEpoch, nil
	}
	if ts < 0 {
		return 0, 0, 0, kerr.InvalidRequest
	}
	off, ok, err := r.log.OffsetForTimestamp(ts)
	if err != nil {
		return 0, 0, 0, err
	}
	if !ok || off >= limit {
		return -1, -1, st.LeaderEpoch, nil
	}
	return off, ts, st.LeaderEpoch, nil
}

func (b *Broker) handleMetadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b.mu.Lock()
	md := b.metadata
	b.mu.Unlock()
	cid := ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = -1
	for _, br := range md.Brokers {
		if br.Fenced {
			continue
		}
		host, port, err := net.SplitHostPort(br.Listener)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = br.ID, host, int32(p)
		resp.Brokers = append(resp.Brokers, mb)
		if resp.ControllerID < 0 {
			resp.ControllerID = br.ID // any broker forwards admin requests to the lab's controller
		}
	}
	want := map[string]bool{}
	// v0 has no null list: an empty one asks for every topic.
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	for _, t := range req.Topics {
		if t.Topic != nil {
			want[*t.Topic] = true
		}
	}
	// auto.create.topics.enable (autocreate.go); v0–v3 always allow it.
	var createErrs map[string]error
	if (req.AllowAutoTopicCreation || req.Version < 4) && b.autoCreateTopics() && !all {
		var missing []string
		for name := range want {
			if md.Topic(name) == nil {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			createErrs = b.autoCreate(missing)
			b.mu.Lock()
			md = b.metadata // every broker has the new topics now
			b.mu.Unlock()
		}
	}
	found := map[string]bool{}
	for _, t := range md.Topics {
		if !all && !want[t.Name] {
			continue
		}
		found[t.Name] = true
		mt := kmsg.NewMetadataResponseTopic()
		name := t.Name
		mt.Topic = &name
		mt.TopicID = t.ID
		for _, p := range t.Partitions {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
			mp.Replicas, mp.ISR = append([]int32(nil), p.Replicas...), append([]int32(nil), p.ISR...)
			if p.Leader < 0 {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			for _, id := range p.Replicas {
				if !brokerLive(md, id) {
					mp.OfflineReplicas = append(mp.OfflineReplicas, id)
				}
			}
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	for name := range want {
		if !found[name] {
			mt := kmsg.NewMetadataResponseTopic()
			n := name
			mt.Topic = &n
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if err := createErrs[name]; err != nil {
				mt.ErrorCode = errorCode(err) // a bad name, a budget: INVALID_TOPIC_EXCEPTION, POLICY_VIOLATION
			}
			resp.Topics = append(resp.Topics, mt)
		}
	}
	return resp
}

func (b *Broker) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			r := b.replicaFor(t.Topic, p.Partition)
			if r == nil {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				r.mu.Lock()
				st := r.status()
				r.mu.Unlock()
				switch {
				case st.Role != replication.RoleLeader:
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				case checkLeaderEpoch(p.CurrentLeaderEpoch, st.LeaderEpoch) != nil:
					rp.ErrorCode = errorCode(checkLeaderEpoch(p.CurrentLeaderEpoch, st.LeaderEpoch))
				default:
					eo := replication.EndOffsetForEpoch(st.EpochCache, st.LogEndOffset, p.LeaderEpoch)
					rp.LeaderEpoch, rp.EndOffset = eo.Epoch, eo.EndOffset
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// logAppendTime is the time the leader stamped on the batch it appended at
// base, when the topic's message.timestamp.type is LogAppendTime; -1
// otherwise, as Kafka answers a produce to a CreateTime topic.
func (b *Broker) logAppendTime(topic string, partition int32, base int64) int64 {
	r := b.replicaFor(topic, partition)
	if r == nil || !r.log.Config().LogAppendTime {
		return -1
	}
	ts := int64(-1)
	_ = r.log.EachBatch(base, base+1, 1, func(bt storage.Batch) bool {
		ts = bt.Header.MaxTimestamp
		return false
	})
	return ts
}
