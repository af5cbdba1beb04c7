package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUnservedAnswer: an unserved API whose response has no top-level
// error code is answered item by item with UNSUPPORTED_VERSION, and the
// answer decodes at the version asked.
func TestUnservedAnswer(t *testing.T) {
	el := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "t", []int32{0, 1}
	el.Topics = append(el.Topics, et)
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx"}
	for _, req := range []kmsg.Request{el, dt} {
		if unsupportedResponse(req.Key(), 0) != nil {
			t.Fatalf("%s v0 has a top-level error code; pick another API", kmsg.NameForKey(req.Key()))
		}
		resp := unservedAnswer(req)
		if resp == nil {
			t.Fatalf("%s: no answer", kmsg.NameForKey(req.Key()))
		}
		resp.SetVersion(0)
		back := kmsg.ResponseForKey(req.Key())
		back.SetVersion(0)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		var codes []int16
		switch r := back.(type) {
		case *kmsg.ElectLeadersResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
		case *kmsg.DescribeTransactionsResponse:
			codes = append(codes, r.TransactionStates[0].ErrorCode)
		}
		if len(codes) == 0 {
			t.Fatalf("%s: no items in the answer", kmsg.NameForKey(req.Key()))
		}
		for _, c := range codes {
			if c != kerr.UnsupportedVersion.Code {
				t.Fatalf("%s: %v, want UNSUPPORTED_VERSION", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(c))
			}
		}
	}
}
