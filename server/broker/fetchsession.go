package broker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/storage"
)

// Fetch sessions (KIP-227). A Fetch of v7+ may open a session on the
// leader; later requests of that session ("incremental") name only the
// partitions whose fetch parameters changed, and the response carries only
// the partitions with something new: records, an error, a diverging epoch,
// or a HW or log start offset the client has not heard yet. An idle
// follower's long poll is then an empty request answered by an empty
// response, whatever the number of partitions it follows.
const (
	// maxFetchSessions is Kafka's max.incremental.fetch.session.cache.slots.
	// When every slot is taken, the least recently used session is evicted
	// (its client gets FETCH_SESSION_ID_NOT_FOUND and starts a new one).
	maxFetchSessions = 1000
	// maxSessionPartitions bounds the partitions all sessions cache
	// together, so sessions cannot grow memory without end: a session that
	// would pass it is not opened (the fetch is answered without one) or,
	// when an incremental fetch grows it, is closed.
	maxSessionPartitions = 100_000
)

// Session epochs as KIP-227 spells them: 0 opens a session (a full fetch),
// -1 fetches without one (closing the session named, if any).
const (
	initialSessionEpoch = 0
	finalSessionEpoch   = -1
)

// fetchSessions is a broker's cache of fetch sessions by id.
//
// Lock order: a session's mu before fetchSessions.mu (an incremental fetch
// counts the partitions it adds); create locks a new session's mu under
// fetchSessions.mu, before anyone else can see it.
type fetchSessions struct {
	mu       sync.Mutex // guards byID, parts, and each session's used and counted
	byID     map[int32]*fetchSession
	parts    int    // partitions cached by every session together
	lastUsed uint64 // counts lookups, for least-recently-used eviction
}

// fetchSession is one client's fetch session. Its mu is held through a
// request, so a session serves one Fetch at a time.
type fetchSession struct {
	id        int32
	replicaID int32 // the follower that opened it; -1 for a consumer

	used    uint64 // fetchSessions.lastUsed at its last request; under fetchSessions.mu
	counted int    // its partitions in fetchSessions.parts; under fetchSessions.mu

	mu    sync.Mutex
	epoch int32 // the epoch the next incremental request must carry
	parts []sessionPart
	at    map[storage.TopicPartition]int // index in parts
	// Scratch of one request, reused by the next: an idle follower's long
	// poll allocates nothing per partition.
	fps  []fetchPart
	outs []kmsg.FetchResponseTopicPartition
}

// sessionPart is one partition a Fetch reads: its request parameters (from
// the request, or cached in the session for a partition an incremental
// request left out) and, in a session, what the client last heard of it.
type sessionPart struct {
	topic   string
	topicID [16]byte
	req     kmsg.FetchRequestTopicPartition
	// Answered once in this session, with this HW and log start offset.
	answered     bool
	hw, logStart int64
}

// open finds the partitions req reads and, for a v7+ request, its session:
// it opens, closes or continues one as req.SessionID and req.SessionEpoch
// say. The session returned (nil without one) is locked: the caller calls
// done. errCode is a top-level error (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH) with which the request is answered at once.
// req's topics are named (resolveTopicIDs, from names) and deduplicated.
func (c *fetchSessions) open(req *kmsg.FetchRequest, replicaID int32, names map[[16]byte]string) (parts []sessionPart, s *fetchSession, errCode int16) {
	requested := func() []sessionPart {
		n := 0
		for _, t := range req.Topics {
			n += len(t.Partitions)
		}
		parts := make([]sessionPart, 0, n)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, sessionPart{topic: t.Topic, topicID: t.TopicID, req: p})
			}
		}
		return parts
	}
	if req.Version < 7 {
		return requested(), nil, 0
	}
	switch req.SessionEpoch {
	case finalSessionEpoch:
		c.close(req.SessionID)
		return requested(), nil, 0
	case initialSessionEpoch:
		c.close(req.SessionID)
		parts = requested()
		return parts, c.create(parts, replicaID), 0
	}
	c.mu.Lock()
	s = c.byID[req.SessionID]
	if s == nil || s.replicaID != replicaID {
		c.mu.Unlock()
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	}
	c.lastUsed++
	s.used = c.lastUsed
	c.mu.Unlock()
	s.mu.Lock()
	if req.SessionEpoch != s.epoch {
		s.mu.Unlock()
		return nil, nil, kerr.InvalidFetchSessionEpoch.Code
	}
	if req.Version >= 13 {
		s.resolve(names)
	}
	before := len(s.parts)
	s.update(req)
	if !c.resize(s, len(s.parts)-before) {
		s.mu.Unlock()
		c.close(s.id)
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	}
	s.epoch = nextSessionEpoch(s.epoch)
	return s.parts, s, 0
}

// nextSessionEpoch follows epoch, wrapping to 1 after the largest int32 as
// Kafka's FetchMetadata.nextEpoch does.
func nextSessionEpoch(epoch int32) int32 {
	if epoch == 1<<31-1 {
		return 1
	}
	return epoch + 1
}

// create opens a session of parts, locked, or returns nil when the cache
// has no room for its partitions. A follower's new session replaces its
// old ones: a follower fetches from a leader over one fetcher.
func (c *fetchSessions) create(parts []sessionPart, replicaID int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[int32]*fetchSession{}
	}
	if replicaID >= 0 {
		for id, old := range c.byID {
			if old.replicaID == replicaID {
				c.removeLocked(id)
			}
		}
	}
	if c.parts+len(parts) > maxSessionPartitions {
		return nil
	}
	if len(c.byID) >= maxFetchSessions {
		var lru *fetchSession
		for _, s := range c.byID {
			if lru == nil || s.used < lru.used {
				lru = s
			}
		}
		c.removeLocked(lru.id)
	}
	id := rand.Int32N(1<<31-1) + 1 // never 0: that is "no session"
	for c.byID[id] != nil {
		id = rand.Int32N(1<<31-1) + 1
	}
	c.lastUsed++
	s := &fetchSession{id: id, replicaID: replicaID, used: c.lastUsed, counted: len(parts), epoch: 1, parts: parts}
	s.index()
	c.byID[id] = s
	c.parts += len(parts)
	s.mu.Lock()
	return s
}

// resize counts n more cached partitions for s; false (and nothing
// counted) if that passes maxSessionPartitions.
func (c *fetchSessions) resize(s *fetchSession, n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > 0 && c.parts+n > maxSessionPartitions {
		return false
	}
	if c.byID[s.id] == s {
		c.parts += n
		s.counted += n
	}
	return true
}

// close removes session id, if there is one.
func (c *fetchSessions) close(id int32) {
	if id == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id)
}

func (c *fetchSessions) removeLocked(id int32) {
	if s := c.byID[id]; s != nil {
		delete(c.byID, id)
		c.parts -= s.counted
	}
}

// update applies an incremental request to the session: its partitions
// are added or replace the cached parameters, its forgotten topics' are
// removed. A topic's partitions stay together, in the order the topics
// first came, so the response names each topic once.
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	added := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if i, ok := s.at[tp]; ok {
				s.parts[i].topicID, s.parts[i].req = t.TopicID, p
				continue
			}
			s.at[tp] = len(s.parts)
			s.parts = append(s.parts, sessionPart{topic: t.Topic, topicID: t.TopicID, req: p})
			added = true
		}
	}
	// Forgotten topics are named by id from v13: a deleted topic's id no
	// longer resolves to the name the session holds it under.
	type key struct {
		id    [16]byte
		topic string
		p     int32
	}
	keyOf := func(sp *sessionPart) key {
		if req.Version >= 13 {
			return key{id: sp.topicID, p: sp.req.Partition}
		}
		return key{topic: sp.topic, p: sp.req.Partition}
	}
	var forgotten map[key]bool
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			if forgotten == nil {
				forgotten = map[key]bool{}
			}
			if req.Version >= 13 {
				forgotten[key{id: ft.TopicID, p: p}] = true
			} else {
				forgotten[key{topic: ft.Topic, p: p}] = true
			}
		}
	}
	if !added && len(forgotten) == 0 {
		return
	}
	if len(forgotten) > 0 {
		s.parts = slices.DeleteFunc(s.parts, func(sp sessionPart) bool { return forgotten[keyOf(&sp)] })
	}
	if added {
		first := map[string]int{}
		for i, sp := range s.parts {
			if _, ok := first[sp.topic]; !ok {
				first[sp.topic] = i
			}
		}
		slices.SortStableFunc(s.parts, func(a, b sessionPart) int { return first[a.topic] - first[b.topic] })
	}
	s.index()
}

// resolve names the session's partitions from their topic ids again, with
// the metadata this broker applied now (Kafka's
// CachedPartition.maybeResolveUnknownName). A partition taken into the
// session while its topic id was unknown here (a follower applies a new
// topic before its leader does) is held under unknownTopicIDName; its
// client gets UNKNOWN_TOPIC_ID, its fetch parameters do not change, so its
// incremental requests never name it again: without this it was answered
// UNKNOWN_TOPIC_ID for good and the leader never counted the follower's
// fetches, so the follower never rejoined the ISR. A topic deleted (or
// recreated under its name with a new id) goes the other way. Names and
// ids map one to one, and a topic's partitions, together in s.parts, share
// one id: renamed, they stay together under a name no other topic has.
func (s *fetchSession) resolve(names map[[16]byte]string) {
	renamed := false
	for i := range s.parts {
		sp := &s.parts[i]
		if sp.topicID == ([16]byte{}) { // named by a request older than v13
			continue
		}
		name, ok := names[sp.topicID]
		if !ok {
			if strings.HasPrefix(sp.topic, unknownTopicIDPrefix) {
				continue // unknown still (and no name to format each request)
			}
			name = unknownTopicIDName(sp.topicID)
		}
		if name != sp.topic {
			sp.topic, renamed = name, true
		}
	}
	if renamed {
		s.index()
	}
}

// index rebuilds s.at from s.parts.
func (s *fetchSession) index() {
	s.at = make(map[storage.TopicPartition]int, len(s.parts))
	for i, sp := range s.parts {
		s.at[storage.TopicPartition{Topic: sp.topic, Partition: sp.req.Partition}] = i
	}
}

// mustAnswer reports whether a partition's answer goes into an incremental
// response: Kafka's CachedPartition.maybeUpdateResponseData. Without a
// change the client knows the answer already.
func (sp *sessionPart) mustAnswer(out *kmsg.FetchResponseTopicPartition) bool {
	return !sp.answered || len(out.RecordBatches) > 0 || out.ErrorCode != 0 || out.DivergingEpoch.Epoch >= 0 ||
		out.HighWatermark != sp.hw || out.LogStartOffset != sp.logStart
}

// unknownTopicIDName is the name resolveTopicIDs and fetchSession.resolve
// give a topic id this broker does not know: one no topic can have (names
// are checked at creation), one per id, so each unknown id is answered on
// its own.
func unknownTopicIDName(id [16]byte) string {
	return fmt.Sprintf("%s%x", unknownTopicIDPrefix, id)
}

// unknownTopicIDPrefix starts every name unknownTopicIDName gives.
const unknownTopicIDPrefix = "\x00unknown-topic-id-"
