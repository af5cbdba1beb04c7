package events

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestHistoryPageDecodesAsMessage: the panel decodes a history page with
// DecodeMessage, which reads its snapshot and events as encoding/json does
// and skips its bounds.
func TestHistoryPageDecodesAsMessage(t *testing.T) {
	msgs := fullMessages()
	p := HistoryPage{FirstSeq: 3, LastSeq: 99, Snapshot: msgs[0].Snapshot, Events: msgs[1].Events}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var want HistoryPage
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	m, err := DecodeMessage(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Snapshot, want.Snapshot) || !reflect.DeepEqual(m.Events, want.Events) {
		t.Errorf("decoded as\n%+v\nwant\n%+v", m, want)
	}
}
