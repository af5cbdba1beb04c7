package server

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestBinaryRecordsRoundTrip: keys and values sent as base64
// ("encoding":"base64") are stored as their bytes, and read back with
// ?encoding=base64 byte for byte, bytes that are not UTF-8 included; read
// as text (the default) the same record shows U+FFFD where they were, and
// bad base64 or an unknown encoding is INVALID_REQUEST with nothing
// written. Before, there was no way to send or read such bytes.
func TestBinaryRecordsRoundTrip(t *testing.T) {
	a := newAPILab(t)
	key := []byte{0x00, 0xff, 'k'}
	value := []byte{0xc3, 0x28, 0xa0, 0xa1, 0xf0, 0x28, 0x8c, 0xbc, 0x00, 0x80}
	b64 := base64.StdEncoding.EncodeToString
	before := a.leos()
	a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","encoding":"base64","records":[{"value":"!!"}]}`)
	a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","encoding":"hex","records":[{"value":"00"}]}`)
	a.sameLEOs(before)
	var res produceResult
	a.ok(200, "POST", "/api/v1/topics/demo/records",
		`{"partition":0,"acks":"1","encoding":"base64","records":[{"key":"`+b64(key)+`","value":"`+b64(value)+`"},{"value":null}]}`, &res)
	a.fetchRounds(2, 2, 3)

	var c struct {
		consumed
		Encoding string `json:"encoding"`
	}
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records?encoding=base64", "", &c)
	if c.Encoding != "base64" || len(c.Records) != 2 || c.Records[1].Value != nil {
		t.Fatalf("base64 read: %+v", c)
	}
	gotKey, err1 := base64.StdEncoding.DecodeString(*c.Records[0].Key)
	gotValue, err2 := base64.StdEncoding.DecodeString(*c.Records[0].Value)
	if err1 != nil || err2 != nil || !bytes.Equal(gotKey, key) || !bytes.Equal(gotValue, value) {
		t.Fatalf("read back key % x value % x (%v %v), want % x and % x", gotKey, gotValue, err1, err2, key, value)
	}
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records", "", &c)
	if c.Encoding != "text" || !bytes.ContainsRune([]byte(*c.Records[0].Value), '\uFFFD') {
		t.Fatalf("text read of binary bytes: %+v", c)
	}
	a.fails(400, "INVALID_REQUEST", "GET", "/api/v1/topics/demo/partitions/0/records?encoding=hex", "")
}
