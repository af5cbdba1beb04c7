package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/time/rate"

	"tidemark/apiv1"
	"tidemark/events"
	"tidemark/internal/clip"
	"tidemark/server/controller"
)

// Bounds of the topic and record routes.
const (
	// MaxProduceRecords is the most records one POST …/records may carry.
	MaxProduceRecords = 1000
	// MaxRecordsLimit is the largest limit GET …/records accepts;
	// DefaultRecordsLimit is used when limit is absent.
	MaxRecordsLimit     = 1000
	DefaultRecordsLimit = 100
	// MaxRecordsBytes bounds GET …/records' answer as Kafka's
	// fetch.max.bytes bounds a fetch: records stop once their keys and
	// values pass it, the first record always included (whole), so a
	// reader of large records still moves on with next_offset.
	MaxRecordsBytes = 1 << 20
	// DefaultProduceTimeout is how long a produce waits for its acks when the
	// request names no timeout_ms; MaxProduceTimeout is the longest it may ask.
	DefaultProduceTimeout = 10 * time.Second
	MaxProduceTimeout     = 60 * time.Second
)

// apiRoutes registers the JSON API's control and inspection routes. Routes
// that change the lab refuse other sites' browser requests (sameOrigin).
func (s *Server) apiRoutes(e *echo.Echo) {
	e.GET("/api/v1/topics", s.listTopics)
	e.POST("/api/v1/topics", s.createTopic, sameOrigin)
	e.GET("/api/v1/topics/:topic", s.getTopic)
	e.DELETE("/api/v1/topics/:topic", s.deleteTopic, sameOrigin)
	e.PATCH("/api/v1/topics/:topic/configs", s.alterConfigs, sameOrigin)
	e.POST("/api/v1/topics/:topic/records", s.produce, sameOrigin)
	e.GET("/api/v1/topics/:topic/partitions/:partition", s.getPartition)
	e.GET("/api/v1/topics/:topic/partitions/:partition/records", s.consume)
	e.GET("/api/v1/brokers/:id/partitions/:topic/:partition/segments", s.getSegments)
	e.GET("/api/v1/brokers/:id/partitions/:topic/:partition/lookup", s.lookup)
	e.POST("/api/v1/brokers/:id/crash", s.crash, sameOrigin)
	e.POST("/api/v1/brokers/:id/power-loss", s.powerLoss, sameOrigin)
	e.POST("/api/v1/brokers/:id/restart", s.restart, sameOrigin)
	e.POST("/api/v1/brokers/:id/fetch", s.fetchRound, sameOrigin)
	e.POST("/api/v1/network/cuts", s.cut, sameOrigin)
	e.DELETE("/api/v1/network/cuts", s.heal, sameOrigin)
	e.POST("/api/v1/clock/pause", s.pause, sameOrigin)
	e.POST("/api/v1/clock/resume", s.resume, sameOrigin)
	e.POST("/api/v1/clock/step", s.step, sameOrigin)
	e.POST("/api/v1/clock/step-event", s.stepEvent, sameOrigin)
	e.POST("/api/v1/clock/rate", s.setRate, sameOrigin)
}

// TopicInfo is one topic in the API: its configs and its partitions.
type TopicInfo struct {
	Name              string            `json:"name"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
	// ReplicationProtocol is replication.protocol (isr when the topic does
	// not set it), shown apart because it is fixed at creation.
	ReplicationProtocol string          `json:"replication_protocol"`
	Partitions          []PartitionInfo `json:"partitions"`
}

// PartitionInfo is apiv1.PartitionInfo.
type PartitionInfo = apiv1.PartitionInfo

func topicInfo(t *events.Topic) TopicInfo {
	ti := TopicInfo{Name: t.Name, Configs: t.Configs, ReplicationProtocol: string(controller.ProtocolISR),
		Partitions: make([]PartitionInfo, 0, len(t.Partitions))}
	if v, ok := t.Configs[controller.ConfigReplicationProtocol]; ok {
		ti.ReplicationProtocol = v
	}
	if ti.Configs == nil {
		ti.Configs = map[string]string{}
	}
	for i := range t.Partitions {
		p := &t.Partitions[i]
		ti.ReplicationFactor = max(ti.ReplicationFactor, len(p.Replicas))
		ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), UnderReplicated: p.UnderReplicated(), Offline: p.Offline()})
	}
	return ti
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// TopicsResponse is the body of GET /api/v1/topics.
type TopicsResponse struct {
	Topics []TopicInfo `json:"topics"`
}

func (s *Server) listTopics(c echo.Context) error {
	snap := s.opts.Lab.Snapshot()
	r := TopicsResponse{Topics: make([]TopicInfo, 0, len(snap.Topics))}
	for i := range snap.Topics {
		r.Topics = append(r.Topics, topicInfo(&snap.Topics[i]))
	}
	return c.JSON(http.StatusOK, r)
}

func (s *Server) getTopic(c echo.Context) error {
	name, err := topicParam(c)
	if err != nil {
		return err
	}
	snap := s.opts.Lab.Snapshot()
	t, err := snapTopic(&snap, name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, topicInfo(t))
}

// CreateTopicRequest is the body of POST /api/v1/topics. Partitions defaults
// to 1 and ReplicationFactor to min(3, brokers).
type CreateTopicRequest struct {
	Name              string                 `json:"name"`
	Partitions        *int32                 `json:"partitions"`
	ReplicationFactor *int16                 `json:"replication_factor"`
	Configs           map[string]configValue `json:"configs"`
	// ReadyTimeoutMs bounds the wait for every partition to have a leader
	// that applied it and a full ISR (default DefaultTopicReadyTimeout, at
	// most MaxTopicReadyTimeout; 0: answer at once).
	ReadyTimeoutMs *int64 `json:"ready_timeout_ms"`
}

// CreateTopicResponse is the answer to POST /api/v1/topics: the topic as
// it was when the wait ended, whether it is ready, and the partitions that
// are not (empty when Ready).
type CreateTopicResponse struct {
	TopicInfo
	Ready    bool                `json:"ready"`
	NotReady []PartitionNotReady `json:"not_ready"`
}

func (s *Server) createTopic(c echo.Context) error {
	if s.topics == nil {
		return notImplemented("create topics")
	}
	var req CreateTopicRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	wait := DefaultTopicReadyTimeout
	if req.ReadyTimeoutMs != nil {
		ms := *req.ReadyTimeoutMs
		if ms < 0 || ms > MaxTopicReadyTimeout.Milliseconds() {
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "ready_timeout_ms must be between 0 and "+strconv.FormatInt(MaxTopicReadyTimeout.Milliseconds(), 10))
		}
		wait = time.Duration(ms) * time.Millisecond
	}
	partitions := int32(1)
	if req.Partitions != nil {
		partitions = *req.Partitions
	}
	snap := s.opts.Lab.Snapshot()
	rf := int16(min(3, len(snap.Brokers)))
	if req.ReplicationFactor != nil {
		rf = *req.ReplicationFactor
	}
	configs := make(map[string]string, len(req.Configs))
	for k, v := range req.Configs {
		if !v.set {
			continue // null: the default, which is what an absent key gives
		}
		configs[k] = v.v
	}
	if err := s.topics.CreateTopic(req.Name, partitions, rf, configs); err != nil {
		return LabError(err)
	}
	snap = s.opts.Lab.Snapshot()
	t, err := snapTopic(&snap, req.Name)
	if err != nil { // deleted again at once by someone else
		return err
	}
	if err := s.checkReplicasOpen(&snap, t); err != nil {
		return err
	}
	if ready, nr, ok := s.awaitTopicReady(c.Request().Context(), req.Name, wait); ok {
		t = ready
		return c.JSON(http.StatusCreated, CreateTopicResponse{TopicInfo: topicInfo(t), Ready: len(nr) == 0, NotReady: nr})
	}
	return c.JSON(http.StatusCreated, CreateTopicResponse{TopicInfo: topicInfo(t), Ready: false, NotReady: s.notReady(&snap, t)})
}

// checkReplicasOpen makes a created topic whose replicas did not open on a
// running broker (out of descriptors, say) an error rather than a 201: its
// partitions would answer UNKNOWN_TOPIC_OR_PARTITION to every producer. The
// lab tells every running broker about a new topic before CreateTopic
// returns, so a missing log is a failure or a cut link to the controller.
func (s *Server) checkReplicasOpen(snap *events.Snapshot, t *events.Topic) error {
	if s.insp == nil {
		return nil
	}
	for _, p := range t.Partitions {
		for _, id := range p.Replicas {
			if b := snap.Broker(id); b == nil || b.State != events.BrokerUp {
				continue
			}
			if _, _, err := s.insp.ReplicaLog(id, t.Name, p.Partition); errors.Is(err, kerr.UnknownTopicOrPartition) {
				return KafkaError(http.StatusInternalServerError, kerr.KafkaStorageError, fmt.Sprintf(
					"topic %s was created, but broker %d has no log for %s-%d: it could not open the files (the lab's log says why) or has not heard of the topic (a cut link to the controller)",
					t.Name, id, t.Name, p.Partition))
			}
		}
	}
	return nil
}

// DeleteTopicResponse is the body of DELETE /api/v1/topics/{topic}.
type DeleteTopicResponse struct {
	Deleted string `json:"deleted"`
}

func (s *Server) deleteTopic(c echo.Context) error {
	if s.topics == nil {
		return notImplemented("delete topics")
	}
	name, err := topicParam(c)
	if err != nil {
		return err
	}
	if err := s.topics.DeleteTopic(name); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, DeleteTopicResponse{Deleted: name})
}

func (s *Server) alterConfigs(c echo.Context) error {
	if s.topics == nil {
		return notImplemented("change topic configs")
	}
	name, err := topicParam(c)
	if err != nil {
		return err
	}
	var req map[string]json.RawMessage
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if len(req) == 0 {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, `no configs given; send {"min.insync.replicas":"2", …} (null resets a key)`)
	}
	changes := make(map[string]*string, len(req))
	for k, raw := range req {
		// Decoded key by key, so that a bad value names its key (a body
		// wrapped in "configs", as topic creation takes them, was only
		// "a config value must be …").
		var v configValue
		if err := v.UnmarshalJSON(raw); err != nil {
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "malformed JSON body: "+strconv.Quote(clip.Bytes(k, 60))+
				": a config value must be a string, number, boolean or null; the body is the configs themselves: {\"min.insync.replicas\":\"2\"}")
		}
		if v.set {
			changes[k] = &v.v
		} else {
			changes[k] = nil
		}
	}
	if err := s.topics.AlterConfigs(name, changes); err != nil {
		return LabError(err)
	}
	snap := s.opts.Lab.Snapshot()
	t, err := snapTopic(&snap, name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, topicInfo(t))
}

// ProduceRequest is the body of POST /api/v1/topics/{topic}/records.
// Partition is optional: without it the first record's key picks one
// (murmur2, as Kafka's default partitioner), or partition 0 without a key.
// Acks is "0", "1" or "all" (also "-1", and 0, 1 or -1 as numbers, as a
// producer's acks config takes them). TimeoutMs bounds the wait for acks
// (default 10000, at most 60000).
//
// DeliveryTimeoutMs bounds the retries of a produce that failed with a
// retriable error before anything was appended (default
// DefaultDeliveryTimeout, at most MaxDeliveryTimeout; 0: one attempt, the
// raw answer), as a producer's delivery.timeout.ms.
//
// Encoding says how keys and values are written: "text" (the default: the
// string's UTF-8 bytes) or "base64" (standard base64 of the bytes, for
// records that are not text), as Kafka's REST proxies take the binary
// format.
type ProduceRequest struct {
	Partition         *int32          `json:"partition"`
	Acks              ProduceAcks     `json:"acks"`
	Records           []ProduceRecord `json:"records"`
	TimeoutMs         *int64          `json:"timeout_ms"`
	DeliveryTimeoutMs *int64          `json:"delivery_timeout_ms"`
	Encoding          string          `json:"encoding"`
}

// Encodings of keys and values in the records routes' JSON.
const (
	EncodingText   = "text"
	EncodingBase64 = "base64"
)

// recordsEncoding returns enc, "" meaning text, or INVALID_REQUEST.
func recordsEncoding(enc string) (string, error) {
	switch enc {
	case "", EncodingText:
		return EncodingText, nil
	case EncodingBase64:
		return enc, nil
	}
	return "", KafkaError(http.StatusBadRequest, kerr.InvalidRequest,
		`encoding must be "text" or "base64", got `+strconv.Quote(clip.Bytes(enc, 20)))
}

// decodeField returns a record field's bytes as enc says (nil for nil).
func decodeField(enc string, v *string, i int, field string) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if enc != EncodingBase64 {
		return []byte(*v), nil
	}
	b, err := base64.StdEncoding.DecodeString(*v)
	if err != nil {
		return nil, KafkaError(http.StatusBadRequest, kerr.InvalidRequest,
			"records["+strconv.Itoa(i)+"]."+field+" is not base64 (encoding is \"base64\"): "+err.Error())
	}
	return b, nil
}

// ProduceAcks is a produce request's acks as a string or a number; -1 is
// "all". Anything else is kept as written, for the error to quote.
type ProduceAcks events.Acks

// UnmarshalJSON takes "0", "1", "all", "-1", 0, 1 and -1.
func (a *ProduceAcks) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		*a = ProduceAcks(v)
	case float64:
		*a = ProduceAcks(strconv.FormatFloat(v, 'f', -1, 64))
	default:
		*a = ProduceAcks(b)
	}
	if *a == "-1" {
		*a = ProduceAcks(events.AcksAll)
	}
	return nil
}

// ProduceRecord is one record to produce; key and value are text. A null
// or absent key means no key; a null value is a tombstone.
type ProduceRecord struct {
	Key   *string `json:"key"`
	Value *string `json:"value"`
}

// ProduceResponse is where a successful produce went, and the requests it
// took (the last one the answer).
type ProduceResponse struct {
	Partition  int32            `json:"partition"`
	Leader     int32            `json:"leader"`
	BaseOffset int64            `json:"base_offset"`
	LastOffset int64            `json:"last_offset"`
	Attempts   []ProduceAttempt `json:"attempts"`
}

// topicPartitions returns how many partitions topic name has in the lab's
// visible state (UNKNOWN_TOPIC_OR_PARTITION when it has no such topic),
// without copying the whole Snapshot when the Lab can say.
func (s *Server) topicPartitions(name string) (int, error) {
	if pc, ok := s.opts.Lab.(PartitionCounter); ok {
		if n, ok := pc.TopicPartitions(name); ok {
			return n, nil
		}
		return 0, noTopic(name)
	}
	snap := s.opts.Lab.Snapshot()
	t, err := snapTopic(&snap, name)
	if err != nil {
		return 0, err
	}
	return len(t.Partitions), nil
}

func (s *Server) produce(c echo.Context) error {
	if s.prod == nil {
		return notImplemented("produce")
	}
	name, err := topicParam(c)
	if err != nil {
		return err
	}
	var req ProduceRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	// Check everything before producing: a bad request writes nothing.
	partitions, err := s.topicPartitions(name)
	if err != nil {
		return err
	}
	partition := int32(-1)
	if req.Partition != nil {
		partition = *req.Partition
		if partition < 0 || int(partition) >= partitions {
			return KafkaError(http.StatusNotFound, kerr.UnknownTopicOrPartition,
				"topic "+name+" has partitions 0.."+strconv.Itoa(partitions-1)+", not "+strconv.Itoa(int(partition)))
		}
	}
	var acks int16
	switch events.Acks(req.Acks) {
	case events.AcksNone:
		acks = 0
	case events.AcksLeader:
		acks = 1
	case events.AcksAll:
		acks = -1
	default:
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequiredAcks, `acks must be "0", "1" or "all" (or -1), got `+strconv.Quote(clip.Bytes(string(req.Acks), 20)))
	}
	enc, err := recordsEncoding(req.Encoding)
	if err != nil {
		return err
	}
	switch n := len(req.Records); {
	case n == 0:
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "records is empty; send at least one {\"value\": …}")
	case n > MaxProduceRecords:
		return KafkaError(http.StatusRequestEntityTooLarge, kerr.RecordListTooLarge,
			strconv.Itoa(n)+" records; at most "+strconv.Itoa(MaxProduceRecords)+" per request")
	}
	timeout := DefaultProduceTimeout
	if req.TimeoutMs != nil {
		ms := *req.TimeoutMs
		if ms < 1 || ms > MaxProduceTimeout.Milliseconds() {
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "timeout_ms must be between 1 and "+strconv.FormatInt(MaxProduceTimeout.Milliseconds(), 10))
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	delivery := DefaultDeliveryTimeout
	if req.DeliveryTimeoutMs != nil {
		ms := *req.DeliveryTimeoutMs
		if ms < 0 || ms > MaxDeliveryTimeout.Milliseconds() {
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "delivery_timeout_ms must be between 0 and "+strconv.FormatInt(MaxDeliveryTimeout.Milliseconds(), 10))
		}
		delivery = time.Duration(ms) * time.Millisecond
	}
	recs := make([]Record, len(req.Records))
	for i, r := range req.Records {
		if recs[i].Key, err = decodeField(enc, r.Key, i, "key"); err != nil {
			return err
		}
		if recs[i].Value, err = decodeField(enc, r.Value, i, "value"); err != nil {
			return err
		}
	}
	// The request's context ends when the client goes away; the lab's own
	// timeout bounds the wait otherwise.
	ctx, cancel := context.WithTimeout(c.Request().Context(), delivery+timeout+2*time.Second)
	defer cancel()
	res, attempts, err := s.produceRetrying(ctx, name, partition, acks, recs, timeout, delivery)
	if err != nil {
		return produceError(err, res, attempts)
	}
	return c.JSON(http.StatusOK, ProduceResponse{Partition: res.Partition, Leader: res.Leader, BaseOffset: res.BaseOffset, LastOffset: res.LastOffset, Attempts: attempts})
}

// ConsumeResponse is the body of GET …/partitions/{p}/records: records below
// the high watermark, read from the leader, and where to continue.
// Encoding is how keys and values are written (?encoding=, "text" by
// default): bytes that are not UTF-8 are replaced by U+FFFD in text, and
// kept in base64.
type ConsumeResponse struct {
	Records       []ConsumedRecordJSON `json:"records"`
	HighWatermark int64                `json:"high_watermark"`
	NextOffset    int64                `json:"next_offset"`
	Encoding      string               `json:"encoding"`
}

// ConsumedRecordJSON is one consumed record; key and value are written as
// the response's encoding says (null key: none; null value: a tombstone).
type ConsumedRecordJSON struct {
	Offset      int64   `json:"offset"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Timestamp   int64   `json:"timestamp"`
	Key         *string `json:"key"`
	Value       *string `json:"value"`
}

func textOrNull(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// base64OrNull is b in standard base64; nil for nil.
func base64OrNull(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

// consumeEach reads as s's Consumer does, one record at a time when it
// can (RecordStreamer).
func (s *Server) consumeEach(topic string, partition int32, offset int64, limit int, fn func(ConsumedRecord) bool) (int64, error) {
	if st, ok := s.cons.(RecordStreamer); ok {
		return st.ConsumeEach(topic, partition, offset, limit, fn)
	}
	recs, hw, err := s.cons.Consume(topic, partition, offset, limit)
	for _, r := range recs {
		if !fn(r) {
			break
		}
	}
	return hw, err
}

// consume answers GET …/records as a ConsumeResponse, streamed: each
// record is written as it is read, its key and value in pieces, so the
// answer never sits whole in memory; it stops at limit records and at
// MaxRecordsBytes of keys and values after decompression (the Consumer
// stops at its bound of batches as stored).
func (s *Server) consume(c echo.Context) error {
	if s.cons == nil {
		return notImplemented("consume")
	}
	snap := s.opts.Lab.Snapshot()
	name, p, err := pathPartition(c, &snap)
	if err != nil {
		return err
	}
	offset, err := queryOffset(c, "offset", -1)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, DefaultRecordsLimit, MaxRecordsLimit)
	if err != nil {
		return err
	}
	enc, err := recordsEncoding(c.QueryParam("encoding"))
	if err != nil {
		return err
	}
	w := &recordsWriter{w: c.Response(), base64: enc == EncodingBase64}
	size, next := 0, int64(-1)
	hw, err := s.consumeEach(name, p.Partition, offset, limit, func(x ConsumedRecord) bool {
		if size += len(x.Key) + len(x.Value); next >= 0 && size > MaxRecordsBytes {
			return false // the first record always goes, whole
		}
		if next < 0 {
			c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
			c.Response().WriteHeader(http.StatusOK)
			w.str(`{"records":[`)
		} else {
			w.str(",")
		}
		w.record(x)
		next = x.Offset + 1
		return w.err == nil // the client went away
	})
	if next < 0 { // nothing written yet: the answer may still be an error
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return outOfRange(name, p, offset)
		}
		if err != nil {
			return LabError(err)
		}
		// With nothing returned the reader is at the HW (an offset below
		// the log start or above the LEO is an error), which is where it
		// continues.
		return c.JSON(http.StatusOK, ConsumeResponse{Records: []ConsumedRecordJSON{}, HighWatermark: hw, NextOffset: hw, Encoding: enc})
	}
	if err != nil {
		// Records are on their way: the answer ends with them, valid, and
		// next_offset says where to read on.
		readStoppedLog.Do(func() {
			s.opts.Logger.Warn("records route: reading stopped early; the answer ends with the records sent",
				"topic", name, "partition", p.Partition, "next_offset", next, "err", err)
		})
	}
	w.str(`],"high_watermark":` + strconv.FormatInt(hw, 10) + `,"next_offset":` + strconv.FormatInt(next, 10) +
		`,"encoding":"` + enc + `"}` + "\n")
	return nil
}

// readStoppedLog limits the records route's log of reads that failed
// midway to a line per 10 s.
var readStoppedLog = rate.Sometimes{Interval: 10 * time.Second}

// recordsWriter writes a ConsumeResponse's records as encoding/json would
// (ConsumedRecordJSON's fields, HTML-escaped strings, bytes that are not
// UTF-8 as U+FFFD in text), a key or value in pieces of at most
// recordChunk bytes; err is the first write error, after which it writes
// nothing.
type recordsWriter struct {
	w      io.Writer
	base64 bool
	err    error
}

// recordChunk is the most of a key or value encoded at once.
const recordChunk = 16 << 10

func (rw *recordsWriter) write(b []byte) {
	if rw.err == nil {
		_, rw.err = rw.w.Write(b)
	}
}

func (rw *recordsWriter) str(s string) { rw.write([]byte(s)) }

func (rw *recordsWriter) record(x ConsumedRecord) {
	rw.str(`{"offset":` + strconv.FormatInt(x.Offset, 10) + `,"leader_epoch":` + strconv.FormatInt(int64(x.LeaderEpoch), 10) +
		`,"timestamp":` + strconv.FormatInt(x.Timestamp, 10) + `,"key":`)
	rw.field(x.Key)
	rw.str(`,"value":`)
	rw.field(x.Value)
	rw.str("}")
}

// field writes b as a JSON string in the writer's encoding, null for nil.
func (rw *recordsWriter) field(b []byte) {
	if b == nil {
		rw.str("null")
		return
	}
	rw.str(`"`)
	if rw.base64 {
		e := base64.NewEncoder(base64.StdEncoding, writerOf(rw.write))
		for len(b) > 0 && rw.err == nil {
			n := min(len(b), recordChunk)
			e.Write(b[:n])
			b = b[n:]
		}
		e.Close()
	} else {
		for len(b) > 0 && rw.err == nil {
			n := len(b)
			if n > recordChunk {
				// Cut before a rune's first byte: each piece then
				// decodes to what the whole would (a sequence cut
				// short is invalid either way).
				n = recordChunk
				for i := n; i > n-utf8.UTFMax && i > 0; i-- {
					if utf8.RuneStart(b[i]) {
						n = i
						break
					}
				}
			}
			q, _ := json.Marshal(string(b[:n])) // a string always encodes
			rw.write(q[1 : len(q)-1])
			b = b[n:]
		}
	}
	rw.str(`"`)
}

// writerOf makes an io.Writer of a write func that keeps its own error.
type writerOf func([]byte)

func (f writerOf) Write(b []byte) (int, error) { f(b); return len(b), nil }

// outOfRange is the OFFSET_OUT_OF_RANGE answer to a read at offset, naming
// the leader's log range so a script can tell which end it missed.
func outOfRange(name string, p *events.Partition, offset int64) error {
	msg := "offset " + strconv.FormatInt(offset, 10) + " is outside the log of " + name + "-" + strconv.Itoa(int(p.Partition))
	if r := p.Replica(p.Leader); r != nil {
		msg += "; its leader, broker " + strconv.Itoa(int(p.Leader)) + ", has log start offset " +
			strconv.FormatInt(r.LogStartOffset, 10) + " and log end offset " + strconv.FormatInt(r.LEO, 10)
	}
	return KafkaError(http.StatusBadRequest, kerr.OffsetOutOfRange, msg)
}
