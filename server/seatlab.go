package server

import (
	"context"
	"time"

	"tidemark/server/class"
	"tidemark/server/web"
)

// seatLab is a class seat's lab: the cluster's, with every produce and
// fault the learner sends through a page or the API reported to the seat's
// Learner, so the exercises grade what the learner did (see
// server/class/learner.go) rather than whatever the cluster did.
type seatLab struct {
	lab
	learner *class.Learner
}

var (
	_ web.Producer   = seatLab{}
	_ web.Faults     = seatLab{}
	_ web.DiskFaults = seatLab{}
)

// Produce produces and reports the produce with its outcome.
func (l seatLab) Produce(ctx context.Context, topic string, partition int32, acks int16, records []web.Record, timeout time.Duration) (web.ProduceResult, error) {
	began := l.learner.Begin()
	res, err := l.lab.Produce(ctx, topic, partition, acks, records, timeout)
	l.learner.Did(class.Action{Kind: class.ActionProduce, Began: began, Topic: topic, Partition: res.Partition, Acks: acks,
		First: res.BaseOffset, Last: res.LastOffset, Err: err})
	return res, err
}

func (l seatLab) down(id int32, began uint64, err error) error {
	l.learner.Did(class.Action{Kind: class.ActionDown, Began: began, Broker: id, Err: err})
	return err
}

// Crash crashes broker id and reports it.
func (l seatLab) Crash(id int32) error {
	began := l.learner.Begin()
	return l.down(id, began, l.lab.Crash(id))
}

// PowerLoss cuts broker id's power and reports it.
func (l seatLab) PowerLoss(id int32) (map[string]int64, error) {
	began := l.learner.Begin()
	lost, err := l.lab.PowerLoss(id)
	return lost, l.down(id, began, err)
}

// FailDisk fails broker id's disk and reports it.
func (l seatLab) FailDisk(id int32) error {
	began := l.learner.Begin()
	return l.down(id, began, l.lab.FailDisk(id))
}

// Cut cuts a link and reports it.
func (l seatLab) Cut(from, to int32, oneWay bool) error {
	began := l.learner.Begin()
	err := l.lab.Cut(from, to, oneWay)
	l.learner.Did(class.Action{Kind: class.ActionCut, Began: began, Broker: from, Err: err})
	return err
}

// Restart restarts broker id and reports it.
func (l seatLab) Restart(id int32) error {
	began := l.learner.Begin()
	err := l.lab.Restart(id)
	l.learner.Did(class.Action{Kind: class.ActionUp, Began: began, Broker: id, Err: err})
	return err
}
