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
	"tidemark/internal/fact"
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
		st := r.rp.Status()
		stopped := r.stopped || r.q != nil || r.pl != nil // Raft or the pipeline replicates, not fetches
		r.mu.Unlock()
		if !stopped && st.Role == replication.RoleFollower && st.Leader >= 0 && st.Leader != b.cfg.ID {
			want[st.Leader] = append(want[st.Leader], r)
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
func (r *replica) nextFetch(leader int32) (replication.FetchRequest, bool) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return replication.FetchRequest{}, false
	}
	after := r.processReady()
	fr, ok := r.rp.NextFetch()
	ok = ok && r.rp.Leader() == leader
	r.unlock(after)
	return fr, ok
}

// handleFetchResponse appends what the leader sent and lets the rules see
// the answer (HW, diverging epoch, errors). A response to a fetch made in
// another state (this replica became leader, or a new leader epoch began, or
// its log moved meanwhile) is dropped whole, before anything is appended.
func (r *replica) handleFetchResponse(leader int32, sent replication.FetchRequest, p *kmsg.FetchResponseTopicPartition, leaderLEO int64, stepped bool) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	b := r.b
	r.advance(b.nowMs())
	if !r.rp.CurrentFetch(sent) {
		b.logger.Debug("dropping a fetch response made in an older state", "partition", r.tp, "leader", leader,
			"epoch", sent.CurrentLeaderEpoch, "fetchOffset", sent.FetchOffset)
		r.unlock(r.processReady())
		return
	}
	res := replication.FetchResult{HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset, LogEndOffset: leaderLEO}
	if p.ErrorCode != 0 {
		res.Err = kerr.ErrorForCode(p.ErrorCode)
	}
	if p.DivergingEpoch.Epoch >= 0 {
		res.DivergingEpoch = &replication.EpochEndOffset{Epoch: p.DivergingEpoch.Epoch, EndOffset: p.DivergingEpoch.EndOffset}
	}
	var after []func()
	var appended []replication.Batch
	last := sent.FetchOffset - 1
	fetchAt := len(r.outbox) // the fetch event goes before what it caused
	if res.Err == nil && res.DivergingEpoch == nil && len(p.RecordBatches) > 0 {
		var records []byte
		records, after = r.prepareFollowerAppend(p.RecordBatches)
		if len(records) > 0 {
			info, err := r.log.AppendAsFollower(records)
			if err != nil {
				// Nothing was appended (storage rolls a failed append back);
				// the rules' LEO stays where the log's is.
				b.logger.Warn("follower append", "partition", r.tp, "err", err)
			} else {
				hs := storage.ScanBatchHeaders(records) // AppendAsFollower checked them
				for _, h := range hs {
					r.txnSeen = r.txnSeen || h.Attributes&attrTransactional != 0
					appended = append(appended, replication.Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch})
				}
				last = info.LastOffset
				r.flushBy(b.nowMs())
				r.outbox = append(r.outbox, outboxEvent{ev: r.appendEvent(info, hs[len(hs)-1].PartitionLeaderEpoch), raw: records, late: true})
			}
		}
	}
	hwBefore := r.hw
	if err := r.rp.HandleFetchResponse(res, appended); err != nil {
		b.logger.Error("fetch response not accepted by the replication rules", "partition", r.tp, "err", err)
	}
	after = append(after, r.processReady()...)
	after = append(after, r.followLeaderLogStart(p.LogStartOffset)...) // admin_more.go
	// Report a fetch when it changed something or was stepped by hand; a
	// repeated error is reported once, not at every retry.
	errName := ""
	if res.Err != nil {
		errName = errorName(res.Err)
	}
	newErr := errName != r.lastFetchErr
	r.lastFetchErr = errName
	if stepped || len(appended) > 0 || (res.Err != nil && newErr) || res.DivergingEpoch != nil || r.hw != hwBefore {
		ev := r.event(events.KindFetch)
		ev.Leader = &events.Leadership{Leader: leader, LeaderEpoch: sent.CurrentLeaderEpoch}
		ev.Offsets = &events.Offsets{Base: sent.FetchOffset, Last: last, HW: p.HighWatermark, LEO: r.log.LogEndOffset()}
		if res.Err != nil {
			ev.Error = errorName(res.Err)
		}
		if res.DivergingEpoch != nil {
			ev = fact.Say(ev, "event.fetch.diverging", res.DivergingEpoch.Epoch, res.DivergingEpoch.EndOffset)
		}
		r.outbox = slices.Insert(r.outbox, fetchAt, outboxEvent{ev: ev})
	}
	r.unlock(after)
}

// prepareFollowerAppend drops batches the log already holds and, if the
// leader's first batch starts inside the log's last batch (the two logs cut
// batches differently after a divergence), has the rules truncate to where
// it starts. Callers hold r.mu.
func (r *replica) prepareFollowerAppend(records []byte) ([]byte, []func()) {
	// Headers only: AppendAsFollower checks every batch's CRC. A partial
	// batch at the end (a size-capped response) is dropped, as Kafka does.
	hs := storage.ScanBatchHeaders(records)
	var whole int64
	for _, h := range hs {
		whole += h.Size()
	}
	records = records[:whole]
	leo := r.log.LogEndOffset()
	for len(hs) > 0 && hs[0].LastOffset() < leo {
		records = records[hs[0].Size():]
		hs = hs[1:]
	}
	if len(hs) == 0 || hs[0].BaseOffset >= leo {
		return records, nil
	}
	if err := r.rp.TruncateBeforeAppend(hs[0].BaseOffset); err != nil {
		return nil, nil
	}
	after := r.processReady()
	if r.log.LogEndOffset() != hs[0].BaseOffset {
		return nil, after // the cut ended elsewhere: fetch again from the new LEO
	}
	return records, after
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
