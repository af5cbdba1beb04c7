package web

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/kafkaname"
)

// The API's produce retries as a Kafka producer does (retries,
// retry.backoff.ms and retry.backoff.max.ms, delivery.timeout.ms), so a
// script need not: a produce right after a failover, or right after its
// topic was created, finds a leader that has not applied the metadata yet.
const (
	// DefaultDeliveryTimeout bounds a produce's retries when the request
	// names no delivery_timeout_ms. Kafka's default is 120 s; in the lab a
	// failover is over within a session timeout (a few seconds), and a
	// person waiting on a page should not wait two minutes for an answer.
	DefaultDeliveryTimeout = 10 * time.Second
	// MaxDeliveryTimeout is Kafka's own default, the longest one may ask.
	MaxDeliveryTimeout = 120 * time.Second
	// retryBackoff and retryBackoffMax are Kafka's retry.backoff.ms and
	// retry.backoff.max.ms defaults (KIP-580: exponential between them).
	retryBackoff    = 100 * time.Millisecond
	retryBackoffMax = 1000 * time.Millisecond
)

// retryClock times produce retries; tests give one that moves at once.
type retryClock interface {
	Now() time.Time
	After(time.Duration) <-chan time.Time
}

// ProduceAttempt is one produce request the API sent: the broker it went to
// (-1: no leader known) and its answer (Kafka's error name; "" when it
// succeeded).
type ProduceAttempt struct {
	Broker int32  `json:"broker"`
	Error  string `json:"error,omitempty"`
}

// retriable reports whether a failed produce may be sent again as a
// producer would: its error is one Kafka marks retriable and nothing was
// appended. A retry after an append would write the records twice (the
// API's producer is not idempotent), so those are answered as they are.
func retriable(err error, res ProduceResult) bool {
	if res.BaseOffset >= 0 {
		return false
	}
	for _, e := range []*kerr.Error{kerr.NotLeaderForPartition, kerr.LeaderNotAvailable, kerr.UnknownTopicOrPartition,
		kerr.NotEnoughReplicas, kerr.BrokerNotAvailable, kerr.RequestTimedOut} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// produceRetrying sends records as a producer does: a retriable error is
// sent again after a back-off (100 ms, doubling to 1 s) until it succeeds,
// fails otherwise, or delivery has passed since the first send (0: one
// attempt, the raw answer). It returns the last answer and every attempt.
func (s *Server) produceRetrying(ctx context.Context, topic string, partition int32, acks int16, recs []Record,
	timeout, delivery time.Duration) (ProduceResult, []ProduceAttempt, error) {
	now, after := time.Now, time.After
	if s.retryClock != nil {
		now, after = s.retryClock.Now, s.retryClock.After
	}
	deadline := now().Add(delivery)
	backoff := retryBackoff
	var attempts []ProduceAttempt
	for {
		res, err := s.prod.Produce(ctx, topic, partition, acks, recs, timeout)
		a := ProduceAttempt{Broker: res.Leader}
		if err != nil {
			a.Error = errorName(err)
		}
		attempts = append(attempts, a)
		if err == nil || !retriable(err, res) || ctx.Err() != nil {
			return res, attempts, err
		}
		wait := min(backoff, deadline.Sub(now()))
		if wait <= 0 {
			return res, attempts, err
		}
		select {
		case <-ctx.Done():
			return res, attempts, err
		case <-after(wait):
		}
		backoff = min(2*backoff, retryBackoffMax)
	}
}

// errorName is err's Kafka error name, or its text when it has none.
func errorName(err error) string {
	if ke := kafkaErrorOf(err); ke != nil {
		return kafkaname.Of(ke)
	}
	return err.Error()
}

// produceError is a failed produce's answer: the error, naming the broker
// that gave it, with every attempt.
func produceError(err error, res ProduceResult, attempts []ProduceAttempt) error {
	e := LabError(err)
	ae, ok := e.(*Error)
	if !ok {
		return e
	}
	out := *ae
	if res.Leader >= 0 {
		out.Message = "broker " + strconv.Itoa(int(res.Leader)) + ": " + out.Message
	}
	if n := len(attempts); n > 1 {
		out.Message += " (after " + strconv.Itoa(n) + " attempts)"
	}
	if res.BaseOffset >= 0 && res.LastOffset >= res.BaseOffset {
		out.Message += "; the records were appended at offsets " + strconv.FormatInt(res.BaseOffset, 10) + "–" +
			strconv.FormatInt(res.LastOffset, 10) + " of partition " + strconv.Itoa(int(res.Partition)) + " but not acknowledged"
	}
	out.Attempts = attempts
	return &out
}
