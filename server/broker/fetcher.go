package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/server/wire"
	"tidemark/storage"
)

// fetchVersion is the Fetch version followers send: v12 added the current
// leader epoch, the last fetched epoch and the diverging epoch, v13 topic
// ids instead of names, v15 the follower's broker epoch (KIP-903), which the
// leader passes on with ISR proposals.
const fetchVersion = 15

// ErrLinkCut is returned by a fetch round over a cut link.
var ErrLinkCut = errors.New("network link cut")

// fetcher pulls every partition this broker follows from one leader over one
// connection, as Kafka's replica fetcher threads do.
type fetcher struct {
	b      *Broker
	leader int32
	addr   string
	ctx    context.Context
	cancel context.CancelFunc

	partsMu sync.Mutex
	parts   []*replica

	// flight is the stepped round on its way over a delayed link while the
	// lab is paused (nil: none); FetchRound sends no other meanwhile, as a
	// real fetcher has one Fetch in flight.
	flight atomic.Pointer[baton]

	mu      sync.Mutex // one round at a time; guards client, session and the round's scratch below
	client  *wire.Client
	session followerSession
	// Scratch reused by every round (an idle lab long-polls twice a second
	// per leader): emptied, never shrunk, at the end of each.
	sent  []sentPart
	synth []kmsg.FetchResponseTopicPartition
}

// sentPart is one partition of a round's Fetch, the request the rules
// made for it, and the leader's answer.
type sentPart struct {
	r      *replica
	req    replication.FetchRequest
	answer *kmsg.FetchResponseTopicPartition
}

// followerSession is a fetcher's side of its fetch session with the leader
// (KIP-227; the leader's side is fetchSessions): an idle round sends no
// partition, and the leader answers only those with news.
type followerSession struct {
	id    int32 // 0: none
	epoch int32 // the next request's; initialSessionEpoch asks for a new session
	// parts is what the leader holds for each partition: in a session, the
	// fetch last sent and the HW and log start offset last answered.
	parts map[storage.TopicPartition]*sessionState
	round uint64 // counts rounds, to find the partitions a round left out
}

// sessionState is one partition of a followerSession.
type sessionState struct {
	topicID      [16]byte
	fetch        replication.FetchRequest
	hw, logStart int64
	sentStart    int64  // the follower's log start offset last sent
	round        uint64 // the last round that fetched it
	at           int    // its index in that round's sent parts
}

// reset forgets the session: the next request is a full one that opens a
// new session. Any failed round resets, since the leader may have moved
// the session's epoch on without the answer reaching the follower.
func (s *followerSession) reset() {
	s.id, s.epoch = 0, initialSessionEpoch
	s.parts = nil // a new map, not one sized by the session's largest
}

// updateFetchers gives each leader a fetcher for the partitions this broker
// follows from it.
func (b *Broker) updateFetchers(md controller.Metadata) {
	want := map[int32][]*replica{}
	for _, r := range b.replicaList() {
		r.mu.Lock()
		leader, ok := r.proto.fetchesFrom()
		ok = ok && !r.stopped
		r.mu.Unlock()
		if ok {
			want[leader] = append(want[leader], r)
		}
	}
	addrs := map[int32]string{}
	for _, br := range md.Brokers {
		addrs[br.ID] = br.Listener
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	for id, f := range b.fetchers {
		if _, ok := want[id]; !ok || f.addr != addrs[id] {
			f.stop()
			delete(b.fetchers, id)
		}
	}
	for id, parts := range want {
		f, ok := b.fetchers[id]
		if !ok {
			f = &fetcher{b: b, leader: id, addr: addrs[id]}
			f.ctx, f.cancel = context.WithCancel(b.ctx)
			b.fetchers[id] = f
			b.wg.Add(1)
			go f.loop()
		}
		f.partsMu.Lock()
		f.parts = parts
		f.partsMu.Unlock()
	}
}

// FetchRound makes every fetcher of this broker send one Fetch, without
// waiting for new data, and apply the answer: the lab's "step a fetch".
// While the lab is paused, a Fetch over a link delayed either way is sent
// now and completes when the lab's steps have carried it there and its
// answer back (sendDelayed); a fetcher with one on its way sends none.
func (b *Broker) FetchRound(ctx context.Context) error {
	b.mu.Lock()
	fs := make([]*fetcher, 0, len(b.fetchers))
	for _, f := range b.fetchers {
		fs = append(fs, f)
	}
	b.mu.Unlock()
	sort.Slice(fs, func(i, j int) bool { return fs[i].leader < fs[j].leader })
	var errs []error
	for _, f := range fs {
		if f.flight.Load() != nil {
			continue
		}
		if b.cfg.Clock.Paused() && (b.cfg.Network.Delay(b.cfg.ID, f.leader) > 0 || b.cfg.Network.Delay(f.leader, b.cfg.ID) > 0) {
			f.sendDelayed()
			continue
		}
		if _, err := f.round(ctx, 0, true, nil); err != nil {
			errs = append(errs, fmt.Errorf("fetch from broker %d: %w", f.leader, err))
		}
	}
	return errors.Join(errs...)
}

func (f *fetcher) stop() {
	f.cancel()
	f.mu.Lock()
	if f.client != nil {
		f.client.Close()
		f.client = nil
	}
	f.mu.Unlock()
}

func (f *fetcher) loop() {
	defer f.b.wg.Done()
	defer f.stop()
	for f.ctx.Err() == nil {
		if f.b.cfg.Clock.Paused() {
			f.waitResumed()
			continue
		}
		sent, err := f.round(f.ctx, f.b.cfg.FetchMaxWait, false, nil)
		if err != nil || !sent {
			sleepCtx(f.ctx, f.b.cfg.Clock.Real(100*time.Millisecond))
		}
	}
}

// waitResumed waits while the lab clock is paused: the lab steps the
// fetcher by hand then.
func (f *fetcher) waitResumed() {
	select {
	case <-f.ctx.Done():
	case <-f.b.cfg.Clock.Resumed():
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// round sends one Fetch for every partition that has one to send and applies
// the response. sent is false when there was nothing to fetch. With bt
// (a paused lab's delayed link: sendDelayed) each leg waits for the lab's
// steps to carry it.
func (f *fetcher) round(ctx context.Context, maxWait time.Duration, stepped bool, bt *baton) (sent bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.b
	f.partsMu.Lock()
	parts := f.parts // replaced whole by updateFetchers, never changed in place
	f.partsMu.Unlock()

	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaState.ID, req.ReplicaState.Epoch = b.cfg.ID, b.BrokerEpoch()
	req.MaxWaitMillis = int32(maxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = 16 << 20
	sess := &f.session
	if sess.parts == nil {
		sess.parts = map[storage.TopicPartition]*sessionState{}
	}
	incremental := sess.epoch != initialSessionEpoch
	if !incremental {
		clear(sess.parts)
	}
	req.SessionID, req.SessionEpoch = sess.id, sess.epoch
	sess.round++
	sentParts := f.sent[:0]
	defer func() {
		// Keep the room, not what it held: a response's record batches can
		// be megabytes.
		clear(sentParts)
		f.sent = sentParts[:0]
		clear(f.synth)
		f.synth = f.synth[:0]
	}()
	ids, names := b.topicIDs()
	for _, r := range parts {
		id, known := ids[r.tp.Topic]
		if !known {
			continue // its metadata is not applied yet
		}
		fr, ok := r.nextFetch(f.leader)
		if !ok {
			continue
		}
		st := sess.parts[r.tp]
		if st == nil {
			st = &sessionState{}
			sess.parts[r.tp] = st
		}
		st.round, st.at = sess.round, len(sentParts)
		sentParts = append(sentParts, sentPart{r: r, req: fr})
		// The log start offset tells the leader's DeleteRecords how far
		// this follower followed it (its low watermark).
		start := r.log.LogStartOffset()
		if incremental && st.topicID == id && st.fetch == fr && st.sentStart == start {
			continue // the leader holds this fetch already
		}
		st.topicID, st.fetch, st.sentStart = id, fr, start
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != r.tp.Topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = r.tp.Topic, id
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = r.tp.Partition
		p.FetchOffset = fr.FetchOffset
		p.CurrentLeaderEpoch = fr.CurrentLeaderEpoch
		p.LastFetchedEpoch = fr.LastFetchedEpoch
		p.LogStartOffset = start
		p.PartitionMaxBytes = b.cfg.FetchMaxBytes
		ts := &req.Topics[len(req.Topics)-1]
		ts.Partitions = append(ts.Partitions, p)
	}
	if len(sentParts) < len(sess.parts) {
		// Partitions this round does not fetch leave the session.
		for tp, st := range sess.parts {
			if st.round == sess.round {
				continue
			}
			delete(sess.parts, tp)
			i := slices.IndexFunc(req.ForgottenTopics, func(ft kmsg.FetchRequestForgottenTopic) bool { return ft.TopicID == st.topicID })
			if i < 0 {
				i = len(req.ForgottenTopics)
				ft := kmsg.NewFetchRequestForgottenTopic()
				ft.Topic, ft.TopicID = tp.Topic, st.topicID
				req.ForgottenTopics = append(req.ForgottenTopics, ft)
			}
			req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
		}
	}
	if len(sentParts) == 0 {
		// Nothing to fetch: the leader would keep reading the partitions
		// just forgotten, as if this follower still fetched them. Start
		// over with a full fetch, which replaces the session.
		sess.reset()
		return false, nil
	}
	resp, back, err := f.exchange(ctx, req, sentParts, bt)
	if err != nil {
		sess.reset()
		return true, err
	}
	switch {
	case resp.SessionID == 0:
		sess.id, sess.epoch = 0, initialSessionEpoch // the leader keeps none: ask again next round
	case !incremental:
		sess.id, sess.epoch = resp.SessionID, 1
	case resp.SessionID == sess.id:
		sess.epoch = nextSessionEpoch(sess.epoch)
	default:
		sess.reset()
		return true, fmt.Errorf("the leader answered for fetch session %d, not %d", resp.SessionID, sess.id)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			st := sess.parts[storage.TopicPartition{Topic: names[resp.Topics[i].TopicID], Partition: p.Partition}]
			if st == nil || st.round != sess.round {
				continue
			}
			st.hw, st.logStart = p.HighWatermark, p.LogStartOffset
			sentParts[st.at].answer = p
		}
	}
	if incremental && resp.SessionID != 0 {
		// A partition the leader left out has no news: no records, and
		// the HW and log start offset it answered last.
		f.synth = slices.Grow(f.synth, len(sentParts)) // never grows below: answers point into it
		for i := range sentParts {
			sp := &sentParts[i]
			if sp.answer != nil {
				continue
			}
			st := sess.parts[sp.r.tp]
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = sp.r.tp.Partition
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = st.hw, st.hw, st.logStart
			f.synth = append(f.synth, p)
			sp.answer = &f.synth[len(f.synth)-1]
		}
	}
	if due := b.messagesDue(events.KindFetchResponse, f.leader, b.cfg.ID, len(sentParts)); due > 0 {
		resEvs := make([]events.Event, 0, due)
		for _, sp := range sentParts {
			if sp.answer != nil && len(resEvs) < due {
				resEvs = append(resEvs, fetchResponseEvent(sp.r, sp.answer, f.leader, !back))
			}
		}
		b.publish(resEvs...)
	}
	if !back {
		sess.reset() // the answer is lost: the follower cannot know what the leader now holds
		return true, ErrLinkCut
	}
	var (
		failed int
		first  error // the first partition's error, so a caller gets Kafka's code
	)
	for _, sp := range sentParts {
		p := sp.answer
		if p == nil {
			continue
		}
		var leaderLEO int64 = -1
		if p.ErrorCode == kerr.OffsetOutOfRange.Code {
			leaderLEO = f.latestOffset(ctx, sp.r.tp)
		}
		if p.ErrorCode != 0 {
			failed++
			if first == nil {
				first = kerr.ErrorForCode(p.ErrorCode)
			}
		}
		sp.r.handleFetchResponse(f.leader, sp.req, p, leaderLEO, stepped)
	}
	if failed > 0 {
		// Back off like Kafka's replica.fetch.backoff.ms instead of asking
		// again at once (a leader that has not learnt of a new partition
		// yet answers UNKNOWN_TOPIC_OR_PARTITION until it does).
		return true, fmt.Errorf("%d partition(s) answered with an error: %w", failed, first)
	}
	return true, nil
}

// exchange sends one round's Fetch over the link and returns the leader's
// response, and back = false when the link is cut that way (the leader
// counted the fetch; the answer is lost). An error is a round without a
// response: the link cut towards the leader, the connection, or the
// response's top-level error code. It publishes the round's fetch request
// events.
func (f *fetcher) exchange(ctx context.Context, req *kmsg.FetchRequest, sentParts []sentPart, bt *baton) (resp *kmsg.FetchResponse, back bool, err error) {
	b := f.b
	there := b.cfg.Network.Allowed(b.cfg.ID, f.leader)
	if due := b.messagesDue(events.KindFetchRequest, b.cfg.ID, f.leader, len(sentParts)); due > 0 {
		reqEvs := make([]events.Event, due)
		for i, sp := range sentParts[:due] {
			reqEvs[i] = sp.r.event(events.KindFetchRequest)
			reqEvs[i].Wire = &events.Wire{From: b.cfg.ID, To: f.leader, FetchOffset: sp.req.FetchOffset,
				LastFetchedEpoch: sp.req.LastFetchedEpoch, Lost: !there}
		}
		b.publish(reqEvs...)
	}
	if !there {
		return nil, false, ErrLinkCut
	}
	// A link's delay is lab time: the running lab's fetcher sleeps it; a
	// paused lab's delayed round waits for the steps to carry the Fetch.
	if !f.cross(ctx, b.cfg.ID, f.leader, bt) {
		return nil, false, ErrLinkCut
	}
	if bt != nil {
		// A leader that does not answer must not hold the lab's step.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, delayedRequestTimeout)
		defer cancel()
	}
	if f.client == nil {
		c, err := wire.Dial(ctx, f.addr, fmt.Sprintf("tidemark-follower-%d", b.cfg.ID))
		if err != nil {
			return nil, false, err
		}
		f.client = c
	}
	raw, err := f.client.Request(ctx, req)
	if err != nil {
		f.client.Close()
		f.client = nil
		return nil, false, err
	}
	resp = raw.(*kmsg.FetchResponse)
	// A link cut the other way loses the response: the leader counted the
	// fetch, the follower never hears back.
	back = b.cfg.Network.Allowed(f.leader, b.cfg.ID) && f.cross(ctx, f.leader, b.cfg.ID, bt)
	if back && resp.ErrorCode != 0 {
		return nil, true, kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp, back, nil
}

// delayedRequestTimeout bounds, in real time, a delayed round's request to
// the leader once the lab delivered it (the lab waits for it).
const delayedRequestTimeout = 10 * time.Second

// cross waits for a leg of a round (from→to) to cross its link's delay:
// the running lab's fetcher sleeps it; a delayed round (bt) hands the
// leg to the lab (Network.Carry) and waits until the lab's steps deliver
// it. False if the leg was lost: the link cut when it left or meanwhile,
// or the fetcher stopped.
func (f *fetcher) cross(ctx context.Context, from, to int32, bt *baton) bool {
	net := f.b.cfg.Network
	d := net.Delay(from, to)
	switch {
	case d <= 0:
		return true
	case bt == nil:
		if !f.b.cfg.Clock.Paused() { // a paused lab's immediate round waits for nothing
			sleepCtx(ctx, f.b.cfg.Clock.Real(d))
		}
		return true
	}
	var arrived bool
	if !net.Carry(from, to, func(ok bool) { arrived = ok; bt.pass() }) {
		return false
	}
	return bt.wait(f.ctx) == nil && arrived // arrived is written before pass hands control back
}

// sendDelayed sends one round while the lab is paused and the link to the
// leader is delayed either way: the Fetch leaves now (lab time t), the
// leader answers when it arrives (t + the delay towards it) with its state
// then, and the answer is applied when it is back (plus the delay the
// other way). The round runs on a goroutine of its own that waits at each
// leg for the lab's steps (baton), so only one of them runs at a time and
// the steps stay exact. A cut meanwhile loses the round, a crash (the
// fetcher stops) drops it, a restart starts without it.
func (f *fetcher) sendDelayed() {
	bt := &baton{run: make(chan struct{}), park: make(chan struct{}), done: make(chan struct{})}
	f.flight.Store(bt)
	go func() {
		defer func() {
			f.flight.Store(nil)
			close(bt.done)
		}()
		if _, err := f.round(f.ctx, 0, true, bt); err != nil {
			f.b.logger.Debug("delayed fetch", "leader", f.leader, "err", err)
		}
	}()
	bt.parked() // the Fetch is on its way (or was not sent)
}

// baton hands control back and forth between a delayed round's goroutine
// and the lab's goroutine that delivers its legs: one of the two runs at a
// time.
type baton struct {
	run  chan struct{} // the lab lets the round go on
	park chan struct{} // the round waits for the lab again
	done chan struct{} // closed when the round has ended
}

// wait, in the round, gives control back to the lab until it passes it on;
// an error if ctx ends first (the fetcher stopped).
func (bt *baton) wait(ctx context.Context) error {
	select {
	case bt.park <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-bt.run:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pass, in the lab, lets the round run until it waits again or ends.
func (bt *baton) pass() {
	select {
	case bt.run <- struct{}{}:
	case <-bt.done:
		return
	}
	bt.parked()
}

// parked waits until the round waits for the lab, or has ended.
func (bt *baton) parked() {
	select {
	case <-bt.park:
	case <-bt.done:
	}
}

// latestOffset asks the leader for its LEO (ListOffsets latest, as a
// replica), which a follower needs after OFFSET_OUT_OF_RANGE; -1 if unknown.
func (f *fetcher) latestOffset(ctx context.Context, tp storage.TopicPartition) int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID = f.b.cfg.ID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = tp.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch = tp.Partition, listLatest, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := f.client.Request(ctx, req)
	if err != nil {
		return -1
	}
	resp := raw.(*kmsg.ListOffsetsResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				return p.Offset
			}
		}
	}
	return -1
}

// nextFetch returns the Fetch this replica should send to leader; false if
// it should send none.
func (r *replica) nextFetch(leader int32) (fr replication.FetchRequest, ok bool) {
	r.drive(func(int) bool {
		fr, ok = r.proto.nextFetch(leader)
		return false
	})
	return fr, ok
}

// handleFetchResponse hands the leader's answer to r's fetch to its
// protocol, which appends what it sent.
func (r *replica) handleFetchResponse(leader int32, sent replication.FetchRequest, p *kmsg.FetchResponseTopicPartition, leaderLEO int64, stepped bool) {
	f := fetchAnswer{leader: leader, sent: sent, p: p, leaderLEO: leaderLEO, stepped: stepped}
	r.drive(func(n int) bool { return r.proto.fetched(f, n) })
}

// fetchResponseEvent describes the leader's answer to r's fetch, for the
// stage: how many records and the leader's HW.
func fetchResponseEvent(r *replica, p *kmsg.FetchResponseTopicPartition, leader int32, lost bool) events.Event {
	e := r.event(events.KindFetchResponse)
	e.Wire = &events.Wire{From: leader, To: r.b.cfg.ID, HW: p.HighWatermark, Records: countRecords(p.RecordBatches), Lost: lost}
	if p.ErrorCode != 0 {
		e.Error = errorName(kerr.ErrorForCode(p.ErrorCode))
	}
	return e
}

// countRecords counts the records in a record set from its batch headers.
func countRecords(records []byte) (n int) {
	for _, h := range storage.ScanBatchHeaders(records) {
		n += int(h.NumRecords)
	}
	return n
}
