package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups serves a DeleteGroups request as Kafka's coordinator does:
// a group with members is NON_EMPTY_GROUP, one the coordinator does not
// know (no members, no committed offsets) GROUP_ID_NOT_FOUND; otherwise the
// group and its committed offsets are gone, on disk before the answer.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	c.mu.Lock()
	changed := false
	for _, name := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = name
		g := c.groups[name]
		_, hasOffsets := c.offsets[name]
		switch {
		case name == "":
			rg.ErrorCode = kerr.InvalidGroupID.Code
		case g != nil && (len(g.members) > 0 || len(g.pending) > 0):
			rg.ErrorCode = kerr.NonEmptyGroup.Code
		case g == nil && !hasOffsets:
			rg.ErrorCode = kerr.GroupIDNotFound.Code
		default:
			delete(c.groups, name)
			delete(c.offsets, name)
			changed = true
		}
		resp.Groups = append(resp.Groups, rg)
	}
	if changed {
		c.seq++
	}
	c.mu.Unlock()
	if changed {
		if err := c.persist(); err != nil {
			c.log.Error("writing deleted groups", "err", err)
			for i := range resp.Groups {
				if resp.Groups[i].ErrorCode == 0 {
					resp.Groups[i].ErrorCode = kerr.UnknownServerError.Code
				}
			}
		}
	}
	return resp
}
