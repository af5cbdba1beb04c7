package broker

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/controller"
	"tidemark/server/kafkaerr"
	"tidemark/storage"
)

// Admin is what a broker needs to serve the admin APIs (CreateTopics,
// DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs):
// every broker forwards them to the lab's controller, as a KRaft broker
// forwards to the active controller. The Controller in a broker's Config
// implements it when the lab allows admin requests; without it they answer
// NOT_CONTROLLER. Each call returns once every running broker knows the
// change; errors wrap kerr codes.
type Admin interface {
	CreateTopic(name string, partitions int32, replicationFactor int16, configs map[string]string) (controller.Topic, error)
	DeleteTopic(name string) error
	AlterConfigs(topic string, changes map[string]*string) (controller.Topic, error)
}

// Defaults for a CreateTopics request that leaves the partition count or the
// replication factor to the broker (-1).
const (
	// DefaultNumPartitions is Kafka's num.partitions.
	DefaultNumPartitions = 1
	// DefaultReplicationFactor is the lab's default.replication.factor,
	// bounded by the unfenced brokers: 3 rather than Kafka's 1, because the
	// lab is about replication.
	DefaultReplicationFactor = 3
)

// errNoAdmin answers admin requests when the broker has no Admin link.
var errNoAdmin = fmt.Errorf("%w: this broker cannot reach a controller that serves admin requests", kerr.NotController)

func (b *Broker) admin() (Admin, error) {
	a, ok := b.cfg.Controller.(Admin)
	if !ok {
		return nil, errNoAdmin
	}
	return a, nil
}

// errMessage is the message a response carries for err: its detail alone
// (kafkaerr.Detail), without the Kafka code and description that %w put in
// its text (the code travels in its own field); nil for no error or no
// detail.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := kafkaerr.Detail(err.Error())
	if s == "" {
		return nil
	}
	return &s
}

func (b *Broker) handleCreateTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		var err error
		var created controller.Topic
		if count[t.Topic] > 1 {
			err = fmt.Errorf("%w: topic %q appears more than once in the request", kerr.InvalidRequest, t.Topic)
		} else {
			created, err = b.createTopic(t, req.ValidateOnly)
		}
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errMessage(err)
		} else {
			rt.TopicID = created.ID
			rt.NumPartitions = int32(len(created.Partitions))
			if len(created.Partitions) > 0 {
				rt.ReplicationFactor = int16(len(created.Partitions[0].Replicas))
			}
			for _, e := range created.Config().Entries() {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				v := e.Value
				c.Name, c.Value = e.Name, &v
				c.Source = int8(configSource(e))
				rt.Configs = append(rt.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createTopic creates one topic (or, with validateOnly, checks that it
// could be created) and returns it as created.
func (b *Broker) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly bool) (controller.Topic, error) {
	a, err := b.admin()
	if err != nil {
		return controller.Topic{}, err
	}
	if len(t.ReplicaAssignment) > 0 {
		return controller.Topic{}, fmt.Errorf("%w: the lab assigns replicas itself; give a partition count and a replication factor instead", kerr.InvalidReplicaAssignment)
	}
	configs := map[string]string{}
	for _, c := range t.Configs {
		if c.Value == nil {
			return controller.Topic{}, fmt.Errorf("%w: config %q has a null value", kerr.InvalidConfig, c.Name)
		}
		configs[c.Name] = *c.Value
	}
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		return controller.Topic{}, err
	}
	live := 0
	for _, br := range md.Brokers {
		if !br.Fenced {
			live++
		}
	}
	partitions, rf := t.NumPartitions, t.ReplicationFactor
	if partitions == -1 {
		partitions = DefaultNumPartitions
	}
	if rf == -1 {
		rf = int16(max(1, min(DefaultReplicationFactor, live)))
	}
	if !validateOnly {
		return a.CreateTopic(t.Topic, partitions, rf, configs)
	}
	// Validation only: the checks the controller would make, on its metadata.
	if err := storage.ValidateTopicName(t.Topic); err != nil {
		return controller.Topic{}, err
	}
	if md.Topic(t.Topic) != nil {
		return controller.Topic{}, fmt.Errorf("%w: topic %q", kerr.TopicAlreadyExists, t.Topic)
	}
	if partitions < 1 || partitions > controller.MaxPartitions {
		return controller.Topic{}, fmt.Errorf("%w: %d partitions: must be in [1, %d]", kerr.InvalidPartitions, partitions, controller.MaxPartitions)
	}
	if rf < 1 || int(rf) > live {
		return controller.Topic{}, fmt.Errorf("%w: replication factor %d: must be in [1, %d], the number of unfenced brokers", kerr.InvalidReplicationFactor, rf, live)
	}
	tc, err := controller.ParseTopicConfig(configs)
	if err != nil {
		return controller.Topic{}, err
	}
	if err := tc.Validate(int(rf)); err != nil {
		return controller.Topic{}, err
	}
	// Kafka's controller answers a validate-only request as it would
	// have created the topic, topic id included: one drawn and dropped.
	out := controller.Topic{Name: t.Topic, Configs: configs, Partitions: make([]controller.Partition, partitions)}
	rand.Read(out.ID[:])
	for i := range out.Partitions {
		out.Partitions[i].Replicas = make([]int32, rf)
	}
	return out, nil
}

func (b *Broker) handleDeleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	a, adminErr := b.admin()
	for _, t := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		err := adminErr
		if err == nil {
			var name string
			name, err = b.topicToDelete(t.name, t.id)
			if err == nil {
				rt.Topic = &name
				err = a.DeleteTopic(name)
			}
		}
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// topicToDelete resolves a DeleteTopics entry, named or (v6+) by topic id.
func (b *Broker) topicToDelete(name *string, id [16]byte) (string, error) {
	if name != nil {
		return *name, nil
	}
	if id == ([16]byte{}) {
		return "", fmt.Errorf("%w: neither a topic name nor a topic id", kerr.InvalidRequest)
	}
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		return "", err
	}
	for _, t := range md.Topics {
		if t.ID == id {
			return t.Name, nil
		}
	}
	return "", fmt.Errorf("%w: no topic with that id", kerr.UnknownTopicID)
}

// configSource is where a config's value comes from, as DescribeConfigs says.
func configSource(e controller.ConfigEntry) kmsg.ConfigSource {
	if e.Default {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceDynamicTopicConfig
}

// configType is a topic config's type, as DescribeConfigs v3+ says.
func configType(name string) kmsg.ConfigType {
	switch name {
	case controller.ConfigUncleanLeaderElection:
		return kmsg.ConfigTypeBoolean
	case controller.ConfigTruncationRule, controller.ConfigCompressionType, controller.ConfigMessageTimestampType:
		return kmsg.ConfigTypeString
	case controller.ConfigCleanupPolicy:
		return kmsg.ConfigTypeList
	case controller.ConfigMinCleanableDirtyRatio:
		return kmsg.ConfigTypeDouble
	case controller.ConfigMinInsyncReplicas, controller.ConfigMaxMessageBytes, controller.ConfigSegmentBytes,
		controller.ConfigSegmentIndexBytes, controller.ConfigIndexIntervalBytes:
		return kmsg.ConfigTypeInt
	}
	return kmsg.ConfigTypeLong
}

func (b *Broker) handleDescribeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	md, mdErr := b.cfg.Controller.Metadata()
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var err error
		switch {
		case mdErr != nil:
			err = mdErr
		case res.ResourceType == kmsg.ConfigResourceTypeTopic:
			t := md.Topic(res.ResourceName)
			if t == nil {
				err = fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, res.ResourceName)
				break
			}
			for _, e := range t.Config().Entries() {
				if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, e.Name) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				v := e.Value
				c.Name, c.Value, c.IsDefault = e.Name, &v, e.Default
				c.Source, c.ConfigType = configSource(e), configType(e.Name)
				if req.IncludeSynonyms {
					s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					s.Name, s.Value, s.Source = c.Name, c.Value, c.Source
					c.ConfigSynonyms = append(c.ConfigSynonyms, s)
				}
				rr.Configs = append(rr.Configs, c)
			}
		case res.ResourceType == kmsg.ConfigResourceTypeBroker:
			// An empty name is the cluster-wide default, which the lab's
			// brokers do not have (Kafka answers it with no entries
			// either); another broker's configs are its own to answer.
			id, perr := strconv.Atoi(res.ResourceName)
			switch {
			case res.ResourceName == "":
			case perr != nil || md.Broker(int32(id)) == nil:
				err = fmt.Errorf("%w: no broker %q", kerr.InvalidRequest, res.ResourceName)
			case int32(id) != b.cfg.ID:
				err = fmt.Errorf("%w: broker %d describes its own configs; ask it", kerr.InvalidRequest, id)
			default:
				b.describeBrokerConfigs(&rr, res.ConfigNames, req.IncludeSynonyms)
			}
		default:
			err = fmt.Errorf("%w: resource type %v has no configs in the lab", kerr.InvalidRequest, res.ResourceType)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errMessage(err)
			rr.Configs = nil
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (b *Broker) handleIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		changes := map[string]*string{}
		var err error
		for _, c := range res.Configs {
			if _, dup := changes[c.Name]; dup {
				err = fmt.Errorf("%w: config %q appears more than once", kerr.InvalidRequest, c.Name)
				break
			}
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if c.Value == nil {
					err = fmt.Errorf("%w: SET %q with a null value", kerr.InvalidConfig, c.Name)
				}
				changes[c.Name] = c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				changes[c.Name] = nil
			default:
				// APPEND and SUBTRACT apply to list configs; the lab has none.
				err = fmt.Errorf("%w: %v on %q: the lab's topic configs are not lists", kerr.InvalidConfig, c.Op, c.Name)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = b.alterTopicConfigs(res.ResourceType, res.ResourceName, changes, req.ValidateOnly)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// handleAlterConfigs serves the older, non-incremental AlterConfigs: the
// configs given replace the topic's whole set.
func (b *Broker) handleAlterConfigs(req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	md, mdErr := b.cfg.Controller.Metadata()
	for _, res := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		err := mdErr
		if err == nil {
			changes := map[string]*string{}
			if t := md.Topic(res.ResourceName); t != nil {
				for k := range t.Configs {
					changes[k] = nil
				}
			}
			for _, c := range res.Configs {
				changes[c.Name] = c.Value
			}
			err = b.alterTopicConfigs(res.ResourceType, res.ResourceName, changes, req.ValidateOnly)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// alterTopicConfigs applies (or only validates) config changes to a topic.
func (b *Broker) alterTopicConfigs(typ kmsg.ConfigResourceType, name string, changes map[string]*string, validateOnly bool) error {
	if typ != kmsg.ConfigResourceTypeTopic {
		return fmt.Errorf("%w: the lab can alter topic configs only", kerr.InvalidRequest)
	}
	a, err := b.admin()
	if err != nil {
		return err
	}
	if !validateOnly {
		_, err := a.AlterConfigs(name, changes)
		return err
	}
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		return err
	}
	t := md.Topic(name)
	if t == nil {
		return fmt.Errorf("%w: no topic %q", kerr.UnknownTopicOrPartition, name)
	}
	next := map[string]string{}
	for k, v := range t.Configs {
		next[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(next, k)
		} else {
			next[k] = *v
		}
	}
	tc, err := controller.ParseTopicConfig(next)
	if err != nil {
		return err
	}
	if len(t.Partitions) == 0 {
		return errors.New("topic without partitions")
	}
	return tc.Validate(len(t.Partitions[0].Replicas))
}
