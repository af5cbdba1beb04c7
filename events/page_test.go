package events

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeHistoryPageMatchesJSON: the panel's decoder reads a page as
// encoding/json does, with the fixtures of the message decoder's test.
func TestDecodeHistoryPageMatchesJSON(t *testing.T) {
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
	got, err := DecodeHistoryPage(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded as\n%+v\nwant\n%+v", got, want)
	}
	if _, err := DecodeHistoryPage(`{"first_seq":"x"}`); err == nil {
		t.Error("a string first_seq decoded")
	}
}
