// Package export writes a lab run in forms other tools read: the events as
// JSON Lines, a chaos run's acknowledged writes against what was read back
// as CSV, and the topology and a partition's lanes as SVG drawn on the
// server from the Snapshot (the same facts the stage shows, as a file).
package export

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"

	"tidemark/events"
	"tidemark/server/chaos"
)

// EventsJSONL writes evs one JSON object per line, in the API's event
// format (GET /api/v1/events), oldest first.
func EventsJSONL(w io.Writer, evs []events.Event) error {
	enc := json.NewEncoder(w) // Encode ends each value with a newline
	for i := range evs {
		if err := enc.Encode(&evs[i]); err != nil {
			return err
		}
	}
	return nil
}

// AckedCSVHeader is the first row AckedCSV writes.
var AckedCSVHeader = []string{"value", "producer", "idempotent", "acks", "partition", "acked", "acked_offset",
	"read_count", "read_partition", "read_offset", "outcome"}

// The outcomes of AckedCSV's last column.
const (
	OutcomeRead         = "read"          // read back once, where it was acknowledged (or, unacknowledged, read anyway)
	OutcomeLost         = "lost"          // acknowledged, not read back; a setting could have kept it
	OutcomeUnsyncedLost = "unsynced-lost" // acknowledged, lost to power loss before any replica fsynced it
	OutcomeUnreadable   = "unreadable"    // acknowledged, kept, but its partition ended without a leader or below its HW
	OutcomeDuplicated   = "duplicated"    // read back more than once
	OutcomeWrongOffset  = "wrong-offset"  // read back at another offset than acknowledged
	OutcomeNotRead      = "not-read"      // never acknowledged and not read: allowed
)

// AckedCSV writes one row per write of a finished chaos run: what the
// producer was told (acked, at which offset) against what a consumer read
// back at the end (how often, where), and the checker's verdict.
func AckedCSV(w io.Writer, r *chaos.Result) error {
	type place struct {
		partition int32
		offset    int64
	}
	read := map[string][]place{}
	for p, recs := range r.Final.Consumed {
		for _, rec := range recs {
			read[rec.Value] = append(read[rec.Value], place{p, rec.Offset})
		}
	}
	verdict := map[string]string{}
	for _, l := range r.Report.Lost {
		verdict[l.Write.Value] = OutcomeLost
	}
	for _, l := range r.Report.UnsyncedLost {
		verdict[l.Write.Value] = OutcomeUnsyncedLost
	}
	for _, u := range r.Report.Unreadable {
		verdict[u.Value] = OutcomeUnreadable
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(AckedCSVHeader); err != nil {
		return err
	}
	for _, wr := range r.Writes {
		got := read[wr.Value]
		outcome := verdict[wr.Value]
		if outcome == "" {
			switch {
			case len(got) > 1:
				outcome = OutcomeDuplicated
			case len(got) == 1 && wr.Acked && (got[0].offset != wr.Offset || got[0].partition != wr.Partition):
				outcome = OutcomeWrongOffset
			case len(got) == 1:
				outcome = OutcomeRead
			default:
				outcome = OutcomeNotRead
			}
		}
		readPart, readOff := "", ""
		if len(got) > 0 {
			readPart, readOff = strconv.Itoa(int(got[0].partition)), strconv.FormatInt(got[0].offset, 10)
		}
		ackedOff := ""
		if wr.Acked {
			ackedOff = strconv.FormatInt(wr.Offset, 10)
		}
		if err := cw.Write([]string{wr.Value, strconv.Itoa(wr.Producer), strconv.FormatBool(wr.Idempotent), wr.Acks,
			strconv.Itoa(int(wr.Partition)), strconv.FormatBool(wr.Acked), ackedOff,
			strconv.Itoa(len(got)), readPart, readOff, outcome}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
