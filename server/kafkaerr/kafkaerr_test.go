package kafkaerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDetail: codes and descriptions go, nested or bare; the lab's detail
// stays, and an error with none leaves "".
func TestDetail(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: retention.ms \"-5\": must be ≥ -1", kerr.InvalidConfig), `retention.ms "-5": must be ≥ -1`},
		{fmt.Errorf("%w: %w: every private cluster is in use", kerr.ThrottlingQuotaExceeded, kerr.ThrottlingQuotaExceeded), "every private cluster is in use"},
		{fmt.Errorf("OFFSET_OUT_OF_RANGE: offset 99 is outside [0, 1)"), "offset 99 is outside [0, 1)"},
		{kerr.NotController, ""},
		{fmt.Errorf("no such run"), "no such run"},
		{errors.Join(fmt.Errorf("fetch from broker 1: 1 partition(s) answered with an error: %w", kerr.NotLeaderForPartition), fmt.Errorf("fetch from broker 2: %w", kerr.UnknownTopicOrPartition)),
			"fetch from broker 1: 1 partition(s) answered with an error; fetch from broker 2"},
	} {
		if got := Detail(c.err.Error()); got != c.want {
			t.Errorf("Detail(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
