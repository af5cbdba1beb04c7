package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// stateFile is the coordinator's durable state under its dir: committed
// offsets, the producer-id block and the transactions, rewritten whole (temp file, fsync,
// rename, fsync of the dir) at every change, so a crash leaves either the
// old or the new state. Kafka keeps this in the __consumer_offsets and
// __transaction_state logs; the lab's state is small enough for one file.
const stateFile = "coordinator-state.json"

// diskState is what stateFile holds.
type diskState struct {
	Version int `json:"version"`
	// ProducerIDBlockEnd is the first producer id not yet handed out in
	// any block: after a restart, ids start here, so none is reused.
	ProducerIDBlockEnd int64                             `json:"producer_id_block_end"`
	Groups             map[string]map[string]diskOffsets `json:"groups"` // group → topic → partitions
	// Transactions is the transaction coordinator's state, by
	// transactional id (Kafka's __transaction_state).
	Transactions map[string]Txn `json:"transactions,omitempty"`
}

// diskOffsets is one topic's committed offsets, by partition.
type diskOffsets map[int32]Committed

// Committed is one committed offset: the next offset the group's consumer
// reads, the leader epoch of the record before it (-1 if unknown), and the
// client's metadata string.
type Committed struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

func loadState(dir string) (diskState, error) {
	st := diskState{Version: 1, Groups: map[string]map[string]diskOffsets{}}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("coordinator: %s: %w", stateFile, err)
	}
	if st.Groups == nil {
		st.Groups = map[string]map[string]diskOffsets{}
	}
	return st, nil
}

func saveState(dir string, st diskState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, stateFile+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, stateFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
