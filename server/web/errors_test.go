package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/storage"
)

func TestLabError(t *testing.T) {
	plain := errors.New("disk on fire")
	for _, c := range []struct {
		err         error
		status      int
		code, msg   string
		passThrough bool
	}{
		{kerr.NotEnoughReplicas, http.StatusServiceUnavailable, "NOT_ENOUGH_REPLICAS", "Not appended: the ISR is smaller than min.insync.replicas.", false},
		{fmt.Errorf("%w: topic %q", kerr.TopicAlreadyExists, "x"), http.StatusConflict, "TOPIC_ALREADY_EXISTS", `topic "x"`, false},
		{kerr.NotLeaderForPartition, http.StatusServiceUnavailable, "NOT_LEADER_OR_FOLLOWER", "That broker is not this partition's leader.", false},
		{fmt.Errorf("fetch from broker 1: %w", kerr.UnknownTopicOrPartition), http.StatusNotFound, "UNKNOWN_TOPIC_OR_PARTITION", "fetch from broker 1", false},
		{kerr.RequestTimedOut, http.StatusGatewayTimeout, "REQUEST_TIMED_OUT", "The request timed out.", false},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, "REQUEST_TIMED_OUT", "waiting: context deadline exceeded", false},
		{kerr.OffsetNotAvailable, http.StatusServiceUnavailable, "OFFSET_NOT_AVAILABLE", kerr.OffsetNotAvailable.Description, false}, // retriable, unlisted
		{kerr.InvalidTxnState, http.StatusInternalServerError, "INVALID_TXN_STATE", kerr.InvalidTxnState.Description, false},         // not retriable, unlisted
		{&storage.OffsetOutOfRangeError{Offset: 99, LogStartOffset: 0, LogEndOffset: 1}, http.StatusBadRequest, "OFFSET_OUT_OF_RANGE", "offset 99 is outside [0, 1)", false},
		{plain, 0, "", "", true},
	} {
		got := LabError(c.err)
		if c.passThrough {
			if got != c.err {
				t.Errorf("LabError(%v) = %v, want it unchanged", c.err, got)
			}
			continue
		}
		var e *Error
		if !errors.As(got, &e) || e.Status != c.status || e.Code != c.code || e.Message != c.msg {
			t.Errorf("LabError(%v) = %+v, want %d %s %q", c.err, got, c.status, c.code, c.msg)
		}
	}
	if LabError(nil) != nil {
		t.Error("LabError(nil) is not nil")
	}
	// Through the handler an unexpected error is a 500 that hides its text.
	if e := toError(LabError(plain)); e.Status != 500 || e.Message == plain.Error() {
		t.Errorf("plain error became %+v", e)
	}
}
