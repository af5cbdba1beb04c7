package cluster

import (
	"path/filepath"

	"tidemark/server/controller"
	"tidemark/server/coordinator"
)

// The admin half of a broker's link to the controller (broker.Admin): a
// Kafka client's CreateTopics, DeleteTopics and AlterConfigs reach the
// controller through whichever broker it asked, and the call returns once
// every running broker has learned the change.

func (l controllerLink) CreateTopic(name string, partitions int32, replicationFactor int16, configs map[string]string) (controller.Topic, error) {
	return roundTrip(l, func() (controller.Topic, error) { return l.c.CreateTopic(name, partitions, replicationFactor, configs) })
}

func (l controllerLink) DeleteTopic(name string) error {
	_, err := roundTrip(l, errOnly(func() error { return l.c.DeleteTopic(name) }))
	return err
}

func (l controllerLink) AlterConfigs(topic string, changes map[string]*string) (controller.Topic, error) {
	return roundTrip(l, func() (controller.Topic, error) { return l.c.AlterConfigs(topic, changes) })
}

func (l controllerLink) CreatePartitions(topic string, count int32) (controller.Topic, error) {
	return roundTrip(l, func() (controller.Topic, error) { return l.c.CreatePartitions(topic, count) })
}

// Coordinator gives the broker the lab's group coordinator and producer-id
// manager (broker.Coordinators).
func (l controllerLink) Coordinator() *coordinator.Coordinator { return l.c.groups }

// openCoordinator opens the lab's coordinator on <data>/coordinator.
func openCoordinator(opts Options) (*coordinator.Coordinator, error) {
	return coordinator.Open(coordinator.Options{Dir: filepath.Join(opts.DataDir, "coordinator"), Logger: opts.Logger})
}

// Coordinator returns the lab's group coordinator and producer-id manager.
func (c *Cluster) Coordinator() *coordinator.Coordinator { return c.groups }
