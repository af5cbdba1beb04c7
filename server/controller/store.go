package controller

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Badger layout: one key per record, JSON values so a learner can dump them.
//
//	version                          uint64, big-endian: the metadata version
//	broker/<id %010d>                brokerRecord
//	topic/<name>                     topicRecord
//	partition/<name>/<index %010d>   partitionRecord
//
// Topic names cannot contain '/', so the prefixes never collide.
const (
	keyVersion      = "version"
	keyFencingRule  = "fencing-rule"
	prefixBroker    = "broker/"
	prefixTopic     = "topic/"
	prefixPartition = "partition/"
)

type brokerRecord struct {
	ID       int32  `json:"id"`
	Listener string `json:"listener"`
	Epoch    int64  `json:"epoch"`
	Fenced   bool   `json:"fenced"`
}

type topicRecord struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions int32             `json:"partitions"`
}

type partitionRecord struct {
	Replicas       []int32 `json:"replicas"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
	ELR            []int32 `json:"elr,omitempty"`
	LastKnownELR   []int32 `json:"last_known_elr,omitempty"`
	Joining        []int32 `json:"joining,omitempty"`
}

func brokerKey(id int32) []byte   { return fmt.Appendf(nil, "%s%010d", prefixBroker, id) }
func topicKey(name string) []byte { return []byte(prefixTopic + name) }
func partitionKey(topic string, p int32) []byte {
	return fmt.Appendf(nil, "%s%s/%010d", prefixPartition, topic, p)
}

// OpenBadger opens a badger store in dir with the controller's settings
// (below) and logging: the class roster keeps its few kilobytes there too.
// Unlike the controller's, its store runs badger's two compactors: nothing
// else would compact it.
func OpenBadger(dir string, log *slog.Logger) (*badger.DB, error) {
	return badger.Open(badgerOptions(dir, log).WithNumCompactors(2))
}

// openBadger opens the store with sync writes (a change is on disk before the
// method that made it returns) and sizes fit for a few kilobytes of metadata.
func openBadger(dir string, log *slog.Logger) (*badger.DB, error) {
	return badger.Open(badgerOptions(dir, log))
}

// badgerOptions are openBadger's options. They start no compactor: each of
// badger's compactors wakes every 50 ms for good, which was the largest share
// of an idle lab's wake-ups, while this store fills a level-0 table only per
// 4 MiB memtable of changes. compactStore compacts when level 0 grows instead.
func badgerOptions(dir string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithLogger(badgerLogger{log}).
		WithMetricsEnabled(false).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithMemTableSize(4 << 20).
		WithValueThreshold(64 << 10).
		WithNumMemtables(2).
		WithValueLogFileSize(16 << 20).
		WithNumCompactors(0).
		WithNumGoroutines(2)
}

// needsCompaction reports whether level 0 holds more tables than badger's
// NumLevelZeroTables, where its own compactors would start on it (writes
// stall at NumLevelZeroTablesStall, three times as many).
func needsCompaction(db *badger.DB) bool {
	levels := db.Levels()
	return len(levels) > 0 && levels[0].NumTables > db.Opts().NumLevelZeroTables
}

// compactStore merges every level of db into one (badger's Flatten, the
// compaction its compactors would have run, on this goroutine).
func compactStore(db *badger.DB) error {
	return db.Flatten(1)
}

// badgerLogger sends badger's chatter to slog: errors and warnings as such,
// everything else at debug level so a normal run stays quiet.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any)   { b.l.Error(b.msg(f, a)) }
func (b badgerLogger) Warningf(f string, a ...any) { b.l.Warn(b.msg(f, a)) }
func (b badgerLogger) Infof(f string, a ...any)    { b.l.Debug(b.msg(f, a)) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.l.Debug(b.msg(f, a)) }
func (badgerLogger) msg(f string, a []any) string {
	return "badger: " + strings.TrimSpace(fmt.Sprintf(f, a...))
}

// write persists ch's records and the new version in one transaction.
func (c *Controller) write(ch *change, version uint64) error {
	return c.db.Update(func(txn *badger.Txn) error {
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], version)
		if err := txn.Set([]byte(keyVersion), v[:]); err != nil {
			return err
		}
		if ch.settings {
			if err := txn.Set([]byte(keyFencingRule), []byte(c.rule.String())); err != nil {
				return err
			}
		}
		for _, d := range ch.deleted {
			if err := txn.Delete(topicKey(d.name)); err != nil {
				return err
			}
			for p := range d.partitions {
				if err := txn.Delete(partitionKey(d.name, p)); err != nil {
					return err
				}
			}
		}
		for id := range ch.brokers {
			b := c.brokers[id]
			if err := setJSON(txn, brokerKey(id), brokerRecord{ID: b.ID, Listener: b.Listener, Epoch: b.Epoch, Fenced: b.Fenced}); err != nil {
				return err
			}
		}
		for name := range ch.topics {
			t := c.topics[name]
			if t == nil {
				continue // created and deleted in one change; never happens today
			}
			if err := setJSON(txn, topicKey(name), topicRecord{Name: name, ID: t.id, Configs: t.configs, Partitions: int32(len(t.parts))}); err != nil {
				return err
			}
		}
		for tp := range ch.parts {
			t := c.topics[tp.topic]
			if t == nil {
				continue
			}
			p := t.parts[tp.partition]
			rec := partitionRecord{Replicas: p.Replicas, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: p.ISR, ELR: p.ELR, LastKnownELR: p.LastKnownELR, Joining: p.Joining}
			if err := setJSON(txn, partitionKey(tp.topic, tp.partition), rec); err != nil {
				return err
			}
		}
		return nil
	})
}

func setJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

// load reads the whole store into memory, replacing what c holds. Heartbeat
// times are not stored: brokers keep theirs if c knew them, else get now.
func (c *Controller) load() error {
	version := uint64(0)
	brokers := make(map[int32]*Broker)
	topics := make(map[string]*topicState)
	parts := make(map[string]map[int32]partitionRecord)
	rule := FencingKRaftELR
	err := c.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := string(item.Key())
			val, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			switch {
			case key == keyVersion:
				if len(val) != 8 {
					return fmt.Errorf("key %q: %d bytes, want 8", key, len(val))
				}
				version = binary.BigEndian.Uint64(val)
			case key == keyFencingRule:
				if rule, err = ParseFencingRule(string(val)); err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
			case strings.HasPrefix(key, prefixBroker):
				var r brokerRecord
				if err := json.Unmarshal(val, &r); err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
				brokers[r.ID] = &Broker{ID: r.ID, Listener: r.Listener, Epoch: r.Epoch, Fenced: r.Fenced}
			case strings.HasPrefix(key, prefixTopic):
				var r topicRecord
				if err := json.Unmarshal(val, &r); err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
				cfg, err := ParseTopicConfig(r.Configs)
				if err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
				if r.Partitions < 1 {
					return fmt.Errorf("key %q: %d partitions", key, r.Partitions)
				}
				topics[r.Name] = &topicState{name: r.Name, id: r.ID, configs: r.Configs, cfg: cfg, parts: make([]*Partition, r.Partitions)}
			case strings.HasPrefix(key, prefixPartition):
				rest := key[len(prefixPartition):]
				i := strings.LastIndexByte(rest, '/')
				if i < 0 {
					return fmt.Errorf("key %q: no partition index", key)
				}
				p, err := strconv.ParseInt(rest[i+1:], 10, 32)
				if err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
				var r partitionRecord
				if err := json.Unmarshal(val, &r); err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
				if parts[rest[:i]] == nil {
					parts[rest[:i]] = make(map[int32]partitionRecord)
				}
				parts[rest[:i]][int32(p)] = r
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("controller: reading metadata: %w", err)
	}
	for name, t := range topics {
		for p := range t.parts {
			r, ok := parts[name][int32(p)]
			if !ok {
				return fmt.Errorf("controller: reading metadata: topic %q has no record for partition %d", name, p)
			}
			t.parts[p] = &Partition{Topic: name, Partition: int32(p), Replicas: r.Replicas, Leader: r.Leader,
				LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch, ISR: r.ISR, ELR: r.ELR, LastKnownELR: r.LastKnownELR, Joining: r.Joining}
			if err := t.parts[p].check(); err != nil {
				return fmt.Errorf("controller: reading metadata: %s-%d: %w", name, p, err)
			}
		}
		delete(parts, name)
	}
	for name := range parts {
		return fmt.Errorf("controller: reading metadata: partitions of unknown topic %q", name)
	}
	now := c.now()
	for id, b := range brokers {
		b.LastHeartbeat = now
		if old := c.brokers[id]; old != nil {
			b.LastHeartbeat = old.LastHeartbeat
		}
	}
	c.version, c.brokers, c.topics, c.names = version, brokers, topics, nil
	c.setRule(rule)
	return nil
}
