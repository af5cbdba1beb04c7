package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/controller"
)

// adminController is directController serving the admin APIs too.
type adminController struct{ directController }

func (a adminController) CreateTopic(name string, partitions int32, rf int16, configs map[string]string) (controller.Topic, error) {
	return a.c.CreateTopic(name, partitions, rf, configs)
}
func (a adminController) DeleteTopic(name string) error { return a.c.DeleteTopic(name) }
func (a adminController) AlterConfigs(topic string, changes map[string]*string) (controller.Topic, error) {
	return a.c.AlterConfigs(topic, changes)
}

// TestAdminErrorMessageIsTheDetail: an admin error's message is its
// detail alone; the code travels in its own field. It used to read
// "INVALID_CONFIG: Configuration is invalid.: retention.ms …".
func TestAdminErrorMessageIsTheDetail(t *testing.T) {
	_, brokers := startBrokers(t, 1, pausedClock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		func(ctl *controller.Controller) Controller { return adminController{directController{ctl}} }, nil, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[1].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bad := "-5"
	all, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": &bad}, "t")
	if err != nil {
		t.Fatal(err)
	}
	res := all["t"]
	if res.Err != kerr.InvalidConfig {
		t.Fatalf("error %v, want INVALID_CONFIG", res.Err)
	}
	if !strings.HasPrefix(res.ErrMessage, "retention.ms") || strings.Contains(res.ErrMessage, "INVALID_CONFIG") ||
		strings.Contains(res.ErrMessage, kerr.InvalidConfig.Description) {
		t.Fatalf("error message %q: want the detail alone, starting with retention.ms", res.ErrMessage)
	}
}
