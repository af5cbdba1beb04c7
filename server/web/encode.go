package web

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"tidemark/events"
)

// appendEventsMessage appends the /ws message carrying evs, byte for byte
// as json.Encoder encodes events.Message{Type: events.MessageEvents, Events:
// evs} (its newline included), without reflection: at 1,000 records/s the
// lab publishes ~2,000 events a second to every client, and encoding/json's
// reflection was the largest part of /ws's CPU. The rare payloads (faults,
// configs, clock changes, created topics, truncated records) still go
// through encoding/json. TestAppendEventsMessageMatchesJSON keeps it in step
// with the struct tags.
func appendEventsMessage(b []byte, evs []events.Event) ([]byte, error) {
	b = append(b, `{"type":"`+string(events.MessageEvents)+`"`...)
	if len(evs) > 0 {
		b = append(b, `,"events":[`...)
		for i := range evs {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendEvent(b, &evs[i]); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...), nil
}

func appendEvent(b []byte, e *events.Event) ([]byte, error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b, err := e.Time.AppendText(b) // Time.MarshalJSON's format, and its error for years out of range
	if err != nil {
		return b, err
	}
	b = append(b, `","kind":`...)
	b = appendString(b, string(e.Kind))
	b = appendInt(b, `,"broker":`, int64(e.Broker))
	b = appendStringField(b, `,"topic":`, e.Topic)
	b = appendInt(b, `,"partition":`, int64(e.Partition))
	b = appendStringField(b, `,"message":`, e.Message)
	b = appendStringField(b, `,"message_key":`, e.MessageKey)
	if len(e.MessageArgs) > 0 {
		b = append(b, `,"message_args":[`...)
		for i, a := range e.MessageArgs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
		}
		b = append(b, ']')
	}
	if o := e.Offsets; o != nil {
		b = appendInt(b, `,"offsets":{"base":`, o.Base)
		b = appendInt(b, `,"last":`, o.Last)
		b = appendInt(b, `,"leo":`, o.LEO)
		b = appendInt(b, `,"hw":`, o.HW)
		b = append(b, '}')
	}
	if l := e.Leader; l != nil {
		b = appendInt(b, `,"leader":{"leader":`, int64(l.Leader))
		b = appendInt(b, `,"previous_leader":`, int64(l.PreviousLeader))
		b = appendInt(b, `,"leader_epoch":`, int64(l.LeaderEpoch))
		b = appendInt(b, `,"start_offset":`, l.StartOffset)
		if l.Unclean {
			b = append(b, `,"unclean":true`...)
		}
		if l.LastKnown {
			b = append(b, `,"last_known":true`...)
		}
		b = append(b, '}')
	}
	b = appendInt32s(b, `,"isr":`, e.ISR)
	b = appendInt32s(b, `,"elr":`, e.ELR)
	b = appendStringField(b, `,"error":`, e.Error)
	b = appendStringField(b, `,"acks":`, string(e.Acks))
	if len(e.Records) > 0 {
		b = append(b, `,"records":[`...)
		for i, r := range e.Records {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendInt(b, `{"offset":`, r.Offset)
			b = appendInt(b, `,"leader_epoch":`, int64(r.LeaderEpoch))
			b = appendStringField(b, `,"key":`, r.Key)
			b = append(b, `,"value":`...)
			b = appendString(b, r.Value)
			if r.KeySize != 0 {
				b = appendInt(b, `,"key_size":`, int64(r.KeySize))
			}
			if r.ValueSize != 0 {
				b = appendInt(b, `,"value_size":`, int64(r.ValueSize))
			}
			b = appendStringField(b, `,"digest":`, r.Digest)
			if r.Txn {
				b = append(b, `,"txn":true`...)
			}
			if r.ProducerID != 0 {
				b = appendInt(b, `,"producer_id":`, r.ProducerID)
			}
			b = appendStringField(b, `,"control":`, r.Control)
			if r.Aborted {
				b = append(b, `,"aborted":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(e.Truncated) > 0 {
		if b, err = appendJSON(b, `,"truncated":`, e.Truncated); err != nil {
			return b, err
		}
	}
	if e.Fault != nil {
		if b, err = appendJSON(b, `,"fault":`, e.Fault); err != nil {
			return b, err
		}
	}
	if e.Config != nil {
		if b, err = appendJSON(b, `,"config":`, e.Config); err != nil {
			return b, err
		}
	}
	if e.Clock != nil {
		if b, err = appendJSON(b, `,"clock":`, e.Clock); err != nil {
			return b, err
		}
	}
	b = appendStringField(b, `,"broker_state":`, string(e.BrokerState))
	b = appendStringField(b, `,"listener":`, e.Listener)
	if e.TopicCreated != nil {
		if b, err = appendJSON(b, `,"topic_created":`, e.TopicCreated); err != nil {
			return b, err
		}
	}
	if w := e.Wire; w != nil {
		b = appendInt(b, `,"wire":{"from":`, int64(w.From))
		b = appendInt(b, `,"to":`, int64(w.To))
		b = appendStringField(b, `,"client":`, w.Client)
		if w.FetchOffset != 0 {
			b = appendInt(b, `,"fetch_offset":`, w.FetchOffset)
		}
		if w.LastFetchedEpoch != 0 {
			b = appendInt(b, `,"last_fetched_epoch":`, int64(w.LastFetchedEpoch))
		}
		if w.HW != 0 {
			b = appendInt(b, `,"hw":`, w.HW)
		}
		if w.Records != 0 {
			b = appendInt(b, `,"records":`, int64(w.Records))
		}
		if w.Version != 0 {
			b = append(b, `,"version":`...)
			b = strconv.AppendUint(b, w.Version, 10)
		}
		if w.Lost {
			b = append(b, `,"lost":true`...)
		}
		b = append(b, '}')
	}
	if len(e.ISRChanges) > 0 { // rare: an ISR event's causes
		if b, err = appendJSON(b, `,"isr_changes":`, e.ISRChanges); err != nil {
			return b, err
		}
	}
	if len(e.Segments) > 0 { // rare: a replica's segments changed
		b = append(b, `,"segments":`...)
		for i, x := range e.Segments {
			if i == 0 {
				b = append(b, '[')
			} else {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, x, 10)
		}
		b = append(b, ']')
	}
	if e.Txn != nil {
		b = appendInt(b, `,"txn":{"lso":`, e.Txn.LSO)
		b = append(b, '}')
	}
	if e.Cleaner != nil { // rare: a pass of the log cleaner
		if b, err = appendJSON(b, `,"cleaner":`, e.Cleaner); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendInt(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(b, name...), v, 10)
}

// appendStringField appends name and s unless s is empty (omitempty).
func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, name...), s)
}

// appendInt32s appends name and v unless v is empty (omitempty).
func appendInt32s(b []byte, name string, v []int32) []byte {
	if len(v) == 0 {
		return b
	}
	b = append(b, name...)
	for i, x := range v {
		if i == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ']')
}

// appendJSON appends name and v as encoding/json encodes it.
func appendJSON(b []byte, name string, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(append(b, name...), j...), err
}

// appendString appends s quoted as encoding/json quotes it with HTML
// escaping on (json.Encoder's default): <, > and & as \u003c, \u003e and
// \u0026, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
