// Package kafkaname names Kafka's errors as Kafka names them today, on
// franz-go's kerr. It is the one name table of every layer — the pure
// replication rules and their scenario back-end, the broker, the chaos
// checker, the web API and the lessons — which may not import one another
// (replication must not import server/), so it imports nothing but kerr.
package kafkaname

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Of is the name Kafka gives ke's code today: kerr still calls code 6 by
// its old name, NOT_LEADER_FOR_PARTITION, where Kafka says
// NOT_LEADER_OR_FOLLOWER. "" for nil.
func Of(ke *kerr.Error) string {
	switch {
	case ke == nil:
		return ""
	case ke.Code == kerr.NotLeaderForPartition.Code:
		return "NOT_LEADER_OR_FOLLOWER"
	}
	return ke.Message
}

// Err is the name of the Kafka error err wraps (found with errors.As) and
// true; "" and false for nil or an error that wraps none.
func Err(err error) (string, bool) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return Of(ke), true
	}
	return "", false
}

// Text is the name of the Kafka error err wraps, or err's own text when it
// wraps none (something else broke: say what); "" for nil.
func Text(err error) string {
	if err == nil {
		return ""
	}
	if name, ok := Err(err); ok {
		return name
	}
	return err.Error()
}
