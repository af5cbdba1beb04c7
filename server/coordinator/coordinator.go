// Package coordinator is the lab's group coordinator and producer-id
// manager: it runs Kafka's classic consumer-group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, session and rebalance timeouts), keeps
// committed offsets durably in its own dir (OffsetCommit, OffsetFetch), and
// hands out producer ids (InitProducerId) that are never reused.
//
// One Coordinator serves the whole lab; every broker answers the group
// requests of the groups FindCoordinator maps to it by calling it. Unlike
// Kafka, group membership therefore survives the coordinator broker's crash
// (clients find the next coordinator and carry on); committed offsets, the
// producer-id block and the transactions (txn.go) survive a restart of the
// whole lab.
//
// Time: group timers (session.timeout.ms, rebalance timeouts) run on real
// time (Options.Now, default time.Now), not on the lab clock, because the
// clients' heartbeats run on real time: pausing the lab must not evict
// every consumer when it resumes.
package coordinator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options configures a Coordinator. Zero values give the defaults.
type Options struct {
	// Dir holds the coordinator's state file; it is created if missing.
	Dir string
	// Now is the clock of the group timers. Default time.Now.
	Now func() time.Time
	// TickInterval is how often session and rebalance timeouts are checked.
	// Default 100ms; negative starts no ticker (tests call Tick).
	TickInterval time.Duration
	// MinSessionTimeout and MaxSessionTimeout are Kafka's
	// group.min.session.timeout.ms and group.max.session.timeout.ms: a
	// JoinGroup outside them gets INVALID_SESSION_TIMEOUT. Defaults 1s (the
	// lab's: Kafka says 6s) and 30 minutes.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long the
	// first rebalance of an empty group waits for more members. Default 0
	// (the lab's: Kafka says 3s), so a lone consumer starts at once.
	InitialRebalanceDelay time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes. Default 4096.
	MaxMetadataBytes int
	Logger           *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TickInterval == 0 {
		o.TickInterval = 100 * time.Millisecond
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = time.Second
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = 30 * time.Minute
	}
	if o.MaxMetadataBytes <= 0 {
		o.MaxMetadataBytes = 4096
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Group states, as DescribeGroups and ListGroups name them.
const (
	StateEmpty               = "Empty"
	StatePreparingRebalance  = "PreparingRebalance"
	StateCompletingRebalance = "CompletingRebalance"
	StateStable              = "Stable"
)

// producerIDBlock is how many producer ids are reserved on disk at a time.
const producerIDBlock = 1000

// Coordinator is the lab's group coordinator and producer-id manager. Its
// methods are safe for concurrent use; JoinGroup and SyncGroup block until
// the rebalance reaches them, as Kafka holds those requests.
//
// Lock order: mu, then nothing (waiting requests are answered through
// buffered channels); storeMu is taken without mu.
type Coordinator struct {
	opts   Options
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	// joined is signalled by every JoinGroup: the timer sleeps while no
	// group has a member or a pending id (an idle lab has none), and only
	// a join can give it one.
	joined chan struct{}

	mu      sync.Mutex
	groups  map[string]*group
	offsets map[string]map[string]diskOffsets // group → topic → partition → committed
	nextPID int64
	pidEnd  int64
	seq     uint64 // bumps with every change to persist
	closed  bool
	txns    *Txns // the transaction coordinator's state (txn.go)

	storeMu sync.Mutex
	written uint64 // the newest seq on disk
}

// Open loads the coordinator's state from opts.Dir and starts its timer.
func Open(opts Options) (*Coordinator, error) {
	opts.setDefaults()
	if opts.Dir == "" {
		return nil, errors.New("coordinator: Options.Dir is required")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	st, err := loadState(opts.Dir)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{opts: opts, log: opts.Logger, groups: map[string]*group{}, offsets: st.Groups,
		nextPID: st.ProducerIDBlockEnd, pidEnd: st.ProducerIDBlockEnd, done: make(chan struct{}), joined: make(chan struct{}, 1)}
	c.txns = newTxns(c, st.Transactions)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.tickLoop(ctx)
	return c, nil
}

// Close stops the timer and fails every waiting JoinGroup and SyncGroup
// with NOT_COORDINATOR, so their clients look for the coordinator again.
// Everything committed is already on disk.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	for _, g := range c.groups {
		for _, m := range g.members {
			m.answerJoin(joinError(kerr.NotCoordinator))
			m.answerSync(syncError(kerr.NotCoordinator))
		}
	}
	c.mu.Unlock()
	c.cancel()
	<-c.done
	return nil
}

func (c *Coordinator) tickLoop(ctx context.Context) {
	defer close(c.done)
	if c.opts.TickInterval < 0 {
		return
	}
	t := time.NewTicker(c.opts.TickInterval)
	defer t.Stop()
	for {
		if !c.timersRunning() {
			select {
			case <-ctx.Done():
				return
			case <-c.joined:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Tick()
		}
	}
}

// wakeTimer wakes the timer if it sleeps for want of groups to watch; a
// join calls it after adding its member or pending id, so the timer's next
// look sees them.
func (c *Coordinator) wakeTimer() {
	select {
	case c.joined <- struct{}{}:
	default:
	}
}

// timersRunning reports whether some group has a deadline Tick must watch:
// a member's session, a pending member id or a rebalance.
func (c *Coordinator) timersRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		if len(g.members) > 0 || len(g.pending) > 0 || g.state == StatePreparingRebalance {
			return true
		}
	}
	return false
}

// Tick expires members whose session timed out and completes rebalances
// whose rebalance timeout passed. Open's timer calls it; tests may too.
func (c *Coordinator) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	for _, g := range c.groups {
		g.tick(now)
	}
}

// persist writes the state as of the latest change, unless a later write
// already did. It is called without mu.
func (c *Coordinator) persist() error {
	c.mu.Lock()
	seq := c.seq
	data, err := json.Marshal(diskState{Version: 1, ProducerIDBlockEnd: c.pidEnd, Groups: c.offsets, Transactions: c.txns.snapshot()})
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if seq <= c.written {
		return nil
	}
	var st diskState
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	if err := saveState(c.opts.Dir, st); err != nil {
		return err
	}
	c.written = seq
	return nil
}

// InitProducerID answers InitProducerId for an idempotent producer: a new
// producer id with epoch 0, from a block reserved on disk first so no id is
// handed out twice, even across restarts. A transactional producer's
// request is the transaction coordinator's (broker/txn.go).
func (c *Coordinator) InitProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		// Transactional producers are the transaction coordinator's
		// (broker/txn.go), which comes here for a new id without one.
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	c.mu.Lock()
	needBlock := c.nextPID >= c.pidEnd
	if needBlock {
		c.pidEnd = c.nextPID + producerIDBlock
		c.seq++
	}
	id := c.nextPID
	c.nextPID++
	c.mu.Unlock()
	if needBlock {
		if err := c.persist(); err != nil {
			c.log.Error("reserving producer ids", "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// group is one consumer group's membership and rebalance state.
type group struct {
	c            *Coordinator
	name         string
	state        string
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	order        []string             // member ids in join order, to pick a leader
	pending      map[string]time.Time // ids handed out with MEMBER_ID_REQUIRED, until they join
	// rebalanceDeadline ends PreparingRebalance: members that have not
	// rejoined by then are removed.
	rebalanceDeadline time.Time
}

// member is one group member.
type member struct {
	id, instanceID, clientID, clientHost string
	sessionTimeout, rebalanceTimeout     time.Duration
	protocolType                         string
	protocols                            []kmsg.JoinGroupRequestProtocol
	assignment                           []byte
	deadline                             time.Time // session expiry
	join                                 chan *kmsg.JoinGroupResponse
	sync                                 chan *kmsg.SyncGroupResponse
}

func (m *member) answerJoin(r *kmsg.JoinGroupResponse) {
	if m.join != nil {
		m.join <- r
		m.join = nil
	}
}

func (m *member) answerSync(r *kmsg.SyncGroupResponse) {
	if m.sync != nil {
		m.sync <- r
		m.sync = nil
	}
}

func joinError(err *kerr.Error) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode, r.Generation = err.Code, -1
	return r
}

func syncError(err *kerr.Error) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = err.Code
	return r
}

// groupLocked returns the group, creating an empty one if create. Callers
// hold mu.
func (c *Coordinator) groupLocked(name string, create bool) *group {
	g := c.groups[name]
	if g == nil && create {
		g = &group{c: c, name: name, state: StateEmpty, members: map[string]*member{}, pending: map[string]time.Time{}}
		c.groups[name] = g
	}
	return g
}

func newMemberID(clientID string) string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// JoinGroup serves a JoinGroup request: it blocks until the group's
// rebalance completes (or ctx ends), as Kafka holds the request.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if req.Version >= 1 {
		rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	switch {
	case req.Group == "":
		return joinError(kerr.InvalidGroupID)
	case session < c.opts.MinSessionTimeout || session > c.opts.MaxSessionTimeout:
		return joinError(kerr.InvalidSessionTimeout)
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return joinError(kerr.InconsistentGroupProtocol)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return joinError(kerr.NotCoordinator)
	}
	now := c.opts.Now()
	g := c.groupLocked(req.Group, true)
	if g.state != StateEmpty && (g.protocolType != req.ProtocolType || !g.supportsAny(req.Protocols)) {
		c.mu.Unlock()
		return joinError(kerr.InconsistentGroupProtocol)
	}
	id := req.MemberID
	m := g.members[id]
	switch {
	case id == "" && req.Version >= 4:
		// KIP-394: hand out an id and let the client join with it.
		id = newMemberID(clientID)
		g.pending[id] = now.Add(session)
		c.mu.Unlock()
		c.wakeTimer()
		r := joinError(kerr.MemberIDRequired)
		r.MemberID = id
		return r
	case id == "":
		id = newMemberID(clientID)
	case m == nil:
		if _, ok := g.pending[id]; !ok {
			c.mu.Unlock()
			return joinError(kerr.UnknownMemberID)
		}
	}
	delete(g.pending, id)
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	if m == nil {
		m = &member{id: id}
		g.members[id] = m
		g.order = append(g.order, id)
	} else {
		// A join still waiting is superseded by this one (the client gave
		// up on it and retried).
		m.answerJoin(joinError(kerr.RebalanceInProgress))
	}
	changed := !slices.EqualFunc(m.protocols, req.Protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	m.clientID, m.clientHost = clientID, clientHost
	m.sessionTimeout, m.rebalanceTimeout, m.protocolType = session, rebalance, req.ProtocolType
	m.protocols = slices.Clone(req.Protocols)
	m.join = ch
	m.deadline = now.Add(session)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		if !changed && m.id != g.leader && g.state == StateStable {
			// A follower rejoining with what it had: nothing to rebalance.
			m.answerJoin(g.joinResponse(m, req.Version))
			break
		}
		g.prepareRebalance(now, "member "+id+" joined or changed its subscription")
	case StateEmpty:
		g.protocolType = req.ProtocolType
		g.prepareRebalance(now, "first member joined")
	}
	g.maybeCompleteJoin(now)
	c.mu.Unlock()
	c.wakeTimer()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return joinError(kerr.NotCoordinator)
	}
}

// supportsAny reports whether the group's current protocol is among ps.
func (g *group) supportsAny(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return true
	}
	// While rebalancing there is no chosen protocol yet: any protocol some
	// member supports will do, and completeJoin picks a common one.
	for _, p := range ps {
		for _, m := range g.members {
			for _, q := range m.protocols {
				if p.Name == q.Name {
					return true
				}
			}
		}
	}
	return false
}

// prepareRebalance starts a rebalance: members must rejoin before the
// rebalance timeout (the longest of the members').
func (g *group) prepareRebalance(now time.Time, reason string) {
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			m.answerSync(syncError(kerr.RebalanceInProgress))
		}
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	if g.state == StateEmpty {
		timeout = g.c.opts.InitialRebalanceDelay
	}
	g.state = StatePreparingRebalance
	g.rebalanceDeadline = now.Add(timeout)
	g.c.log.Debug("group rebalance", "group", g.name, "reason", reason)
}

// maybeCompleteJoin completes the join phase once every member has rejoined
// (or the deadline passed, in which case the laggards are removed).
func (g *group) maybeCompleteJoin(now time.Time) {
	if g.state != StatePreparingRebalance {
		return
	}
	all := true
	for _, m := range g.members {
		if m.join == nil {
			all = false
		}
	}
	if !all && now.Before(g.rebalanceDeadline) {
		return
	}
	if !all {
		for id, m := range g.members {
			if m.join == nil {
				g.remove(id)
			}
		}
	}
	if g.c.opts.InitialRebalanceDelay > 0 && now.Before(g.rebalanceDeadline) && g.generation == 0 {
		return // the first rebalance waits for more members
	}
	g.completeJoin()
}

func (g *group) remove(id string) {
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(x string) bool { return x == id })
	if g.leader == id {
		g.leader = ""
	}
}

// completeJoin ends the join phase: a new generation, a protocol every
// member supports, a leader, and every waiting JoinGroup answered.
func (g *group) completeJoin() {
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = StateEmpty, "", ""
		return
	}
	g.protocol = g.chooseProtocol()
	if g.leader == "" {
		g.leader = g.order[0]
	}
	g.state = StateCompletingRebalance
	now := g.c.opts.Now()
	for _, m := range g.members {
		m.assignment = nil
		m.deadline = now.Add(m.sessionTimeout)
		if m.join != nil {
			m.answerJoin(g.joinResponse(m, -1))
		}
	}
}

// chooseProtocol picks, among the protocols every member supports, the one
// most members prefer (Kafka's vote); ties go to the first member's order.
func (g *group) chooseProtocol() string {
	first := g.members[g.order[0]]
	var candidates []string
	for _, p := range first.protocols {
		ok := true
		for _, m := range g.members {
			if !slices.ContainsFunc(m.protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
				ok = false
				break
			}
		}
		if ok {
			candidates = append(candidates, p.Name)
		}
	}
	if len(candidates) == 0 {
		return first.protocols[0].Name
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, c := range candidates {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// joinResponse is m's JoinGroup answer for the current generation; the
// leader gets every member's metadata for the chosen protocol.
func (g *group) joinResponse(m *member, _ int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation, r.LeaderID, r.MemberID = g.generation, g.leader, m.id
	pt, p := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &pt, &p
	if m.id == g.leader {
		for _, id := range g.order {
			mm := g.members[id]
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = id
			if mm.instanceID != "" {
				iid := mm.instanceID
				rm.InstanceID = &iid
			}
			for _, q := range mm.protocols {
				if q.Name == g.protocol {
					rm.ProtocolMetadata = q.Metadata
				}
			}
			r.Members = append(r.Members, rm)
		}
	}
	return r
}

// tick expires members and pending ids whose session ended and completes
// a rebalance whose deadline passed. Callers hold mu.
func (g *group) tick(now time.Time) {
	for id, deadline := range g.pending {
		if now.After(deadline) {
			delete(g.pending, id)
		}
	}
	expired := false
	for id, m := range g.members {
		if m.join == nil && now.After(m.deadline) {
			m.answerSync(syncError(kerr.UnknownMemberID))
			g.remove(id)
			expired = true
			g.c.log.Debug("group member session expired", "group", g.name, "member", id)
		}
	}
	if expired && (g.state == StateStable || g.state == StateCompletingRebalance) {
		g.prepareRebalance(now, "a member's session timed out")
	}
	g.maybeCompleteJoin(now)
}

// member checks a request's member and generation, returning the member
// or the error Kafka gives.
func (g *group) member(id string, generation int32) (*member, *kerr.Error) {
	if g == nil {
		return nil, kerr.UnknownMemberID
	}
	m := g.members[id]
	if m == nil {
		return nil, kerr.UnknownMemberID
	}
	if generation != g.generation {
		return m, kerr.IllegalGeneration
	}
	return m, nil
}

// SyncGroup serves a SyncGroup request: the leader's call hands out the
// assignments; every member's call blocks until the leader's arrives.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	c.mu.Lock()
	g := c.groupLocked(req.Group, false)
	m, kerrr := g.member(req.MemberID, req.Generation)
	if kerrr == nil && req.ProtocolType != nil && *req.ProtocolType != g.protocolType ||
		kerrr == nil && req.Protocol != nil && *req.Protocol != g.protocol {
		kerrr = kerr.InconsistentGroupProtocol
	}
	if kerrr != nil {
		c.mu.Unlock()
		return syncError(kerrr)
	}
	now := c.opts.Now()
	m.deadline = now.Add(m.sessionTimeout)
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	switch g.state {
	case StatePreparingRebalance, StateEmpty:
		c.mu.Unlock()
		return syncError(kerr.RebalanceInProgress)
	case StateStable:
		c.mu.Unlock()
		return g.syncResponse(m)
	}
	m.answerSync(syncError(kerr.RebalanceInProgress)) // a superseded retry
	m.sync = ch
	if m.id == g.leader {
		given := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			given[a.MemberID] = a.MemberAssignment
		}
		for id, mm := range g.members {
			mm.assignment = given[id]
		}
		g.state = StateStable
		for _, mm := range g.members {
			if mm.sync != nil {
				mm.answerSync(g.syncResponse(mm))
			}
		}
	}
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return syncError(kerr.NotCoordinator)
	}
}

func (g *group) syncResponse(m *member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	pt, p := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &pt, &p
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// Heartbeat serves a Heartbeat request: it keeps the member's session
// alive and tells it when a rebalance started (REBALANCE_IN_PROGRESS).
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupLocked(req.Group, false)
	m, err := g.member(req.MemberID, req.Generation)
	if err != nil {
		resp.ErrorCode = err.Code
		return resp
	}
	m.deadline = c.opts.Now().Add(m.sessionTimeout)
	if g.state == StatePreparingRebalance {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
	return resp
}

// LeaveGroup serves a LeaveGroup request: the members leave at once and the
// group rebalances without waiting for their sessions to end.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupLocked(req.Group, false)
	ids := []string{req.MemberID}
	if req.Version >= 3 {
		ids = ids[:0]
		for _, m := range req.Members {
			ids = append(ids, m.MemberID)
		}
	}
	now := c.opts.Now()
	left := false
	for i, id := range ids {
		var code int16
		if g == nil || g.members[id] == nil {
			code = kerr.UnknownMemberID.Code
		} else {
			m := g.members[id]
			m.answerJoin(joinError(kerr.UnknownMemberID))
			m.answerSync(syncError(kerr.UnknownMemberID))
			g.remove(id)
			left = true
		}
		if req.Version >= 3 {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.ErrorCode = id, code
			rm.InstanceID = req.Members[i].InstanceID
			resp.Members = append(resp.Members, rm)
		} else {
			resp.ErrorCode = code
		}
	}
	if left && g.state != StatePreparingRebalance {
		g.prepareRebalance(now, "a member left")
	}
	if g != nil {
		g.maybeCompleteJoin(now)
	}
	return resp
}

// OffsetCommit serves an OffsetCommit request. A commit with generation -1
// and no member id is a "simple" commit, allowed only while the group has no
// members; otherwise member and generation must be current. The answer comes
// after the offsets are on disk.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	var groupErr *kerr.Error
	c.mu.Lock()
	g := c.groupLocked(req.Group, false)
	generation := req.Generation
	if req.Version == 0 {
		generation = -1
	}
	switch {
	case req.Group == "":
		groupErr = kerr.InvalidGroupID
	case generation < 0 && req.MemberID == "":
		if g != nil && len(g.members) > 0 {
			groupErr = kerr.UnknownMemberID
		}
	default:
		var m *member
		m, groupErr = g.member(req.MemberID, generation)
		if groupErr == nil && g.state == StateCompletingRebalance {
			groupErr = kerr.RebalanceInProgress
		}
		if m != nil && groupErr == nil {
			m.deadline = c.opts.Now().Add(m.sessionTimeout)
		}
	}
	changed := false
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case groupErr != nil:
				rp.ErrorCode = groupErr.Code
			case p.Metadata != nil && len(*p.Metadata) > c.opts.MaxMetadataBytes:
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				epoch := int32(-1)
				if req.Version >= 6 {
					epoch = p.LeaderEpoch
				}
				cm := Committed{Offset: p.Offset, LeaderEpoch: epoch}
				if p.Metadata != nil {
					cm.Metadata = *p.Metadata
				}
				c.commitLocked(req.Group, t.Topic, p.Partition, cm)
				changed = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if changed {
		c.seq++
	}
	c.mu.Unlock()
	if changed {
		if err := c.persist(); err != nil {
			c.log.Error("writing committed offsets", "group", req.Group, "err", err)
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if resp.Topics[i].Partitions[j].ErrorCode == 0 {
						resp.Topics[i].Partitions[j].ErrorCode = kerr.UnknownServerError.Code
					}
				}
			}
		}
	}
	return resp
}

func (c *Coordinator) commitLocked(group, topic string, partition int32, cm Committed) {
	topics := c.offsets[group]
	if topics == nil {
		topics = map[string]diskOffsets{}
		c.offsets[group] = topics
	}
	parts := topics[topic]
	if parts == nil {
		parts = diskOffsets{}
		topics[topic] = parts
	}
	parts[partition] = cm
}

// Committed returns a group's committed offset for a partition; false if
// there is none.
func (c *Coordinator) Committed(group, topic string, partition int32) (Committed, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.offsets[group][topic][partition]
	return cm, ok
}

// OffsetFetch serves an OffsetFetch request, v0–v7 (one group) or v8+
// (several): partitions without a commit answer offset -1.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range req.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		if req.Topics == nil {
			topics = nil
		}
		for _, t := range c.fetchLocked(req.Group, topics, req.Topics == nil) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, rg := range req.Groups {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = rg.Group
		g.Topics = c.fetchLocked(rg.Group, rg.Topics, rg.Topics == nil)
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (c *Coordinator) fetchLocked(group string, topics []kmsg.OffsetFetchRequestGroupTopic, all bool) []kmsg.OffsetFetchResponseGroupTopic {
	committed := c.offsets[group]
	if all {
		topics = nil
		for name, parts := range committed {
			t := kmsg.OffsetFetchRequestGroupTopic{Topic: name}
			for p := range parts {
				t.Partitions = append(t.Partitions, p)
			}
			slices.Sort(t.Partitions)
			topics = append(topics, t)
		}
		slices.SortFunc(topics, func(a, b kmsg.OffsetFetchRequestGroupTopic) int { return cmp.Compare(a.Topic, b.Topic) })
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			empty := ""
			rp.Metadata = &empty
			if cm, ok := committed[t.Topic][p]; ok {
				md := cm.Metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = cm.Offset, cm.LeaderEpoch, &md
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// ListGroups serves a ListGroups request: every group with members or
// committed offsets.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string]bool{}
	for n := range c.groups {
		names[n] = true
	}
	for n := range c.offsets {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		state, ptype := StateEmpty, "consumer"
		if g := c.groups[n]; g != nil {
			state = g.state
			if g.protocolType != "" {
				ptype = g.protocolType
			}
		}
		if len(req.StatesFilter) > 0 && !slices.Contains(req.StatesFilter, state) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState = n, ptype, state
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// DescribeGroups serves a DescribeGroups request; an unknown group is
// described as Dead with no members, as Kafka does.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group, dg.State = name, "Dead"
		if _, ok := c.offsets[name]; ok {
			dg.State = StateEmpty
		}
		if g := c.groups[name]; g != nil {
			dg.State, dg.ProtocolType, dg.Protocol = g.state, g.protocolType, g.protocol
			for _, id := range g.order {
				m := g.members[id]
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.ClientID, dm.ClientHost = id, m.clientID, m.clientHost
				if m.instanceID != "" {
					iid := m.instanceID
					dm.InstanceID = &iid
				}
				for _, q := range m.protocols {
					if q.Name == g.protocol {
						dm.ProtocolMetadata = q.Metadata
					}
				}
				dm.MemberAssignment = m.assignment
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}
