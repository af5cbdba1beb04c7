package wire

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is the ApiVersions API key, which this package answers itself.
const apiVersionsKey = 18

// apiVersionsMax is the highest ApiVersions version the listener answers.
// v5 (KIP-1242) adds the cluster id and node id the client expects to reach,
// which this layer does not check, so it stops at v4; a newer client gets
// Kafka's UNSUPPORTED_VERSION downgrade answer and retries at v4.
const apiVersionsMax = 4

// VersionRange is an inclusive range of versions of one API. The zero value
// is the single version 0.
type VersionRange struct {
	Min, Max int16
}

// Contains reports whether v lies in r.
func (r VersionRange) Contains(v int16) bool { return v >= r.Min && v <= r.Max }

// VersionTable maps API keys to the version range implemented for each; a key
// that is absent is not implemented. An empty table implements nothing.
type VersionTable map[int16]VersionRange

// Lookup returns the range for key and whether key is present.
func (t VersionTable) Lookup(key int16) (VersionRange, bool) {
	r, ok := t[key]
	return r, ok
}

// Supports reports whether t implements key at version.
func (t VersionTable) Supports(key, version int16) bool {
	r, ok := t[key]
	return ok && r.Contains(version)
}

// validateHandlerTable checks a Handler's table: every key known to kmsg,
// ranges non-empty and within what kmsg can decode, and no ApiVersions entry
// (the listener answers that itself).
func validateHandlerTable(t VersionTable) error {
	for key, r := range t {
		if key == apiVersionsKey {
			return fmt.Errorf("wire: ApiVersions (key 18) is answered by the listener; remove it from the handler's version table")
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			return fmt.Errorf("wire: version table has API key %d, which kmsg does not know", key)
		}
		if r.Min < 0 || r.Min > r.Max {
			return fmt.Errorf("wire: %s has an empty or negative version range %d..%d", kmsg.NameForKey(key), r.Min, r.Max)
		}
		if r.Max > req.MaxVersion() {
			return fmt.Errorf("wire: %s max version %d is above %d, the newest kmsg can decode", kmsg.NameForKey(key), r.Max, req.MaxVersion())
		}
	}
	return nil
}

// advertised returns the table the listener advertises: the handler's table
// plus ApiVersions itself.
func advertised(t VersionTable) VersionTable {
	out := make(VersionTable, len(t)+1)
	for k, r := range t {
		out[k] = r
	}
	out[apiVersionsKey] = VersionRange{Min: 0, Max: apiVersionsMax}
	return out
}

// apiKeys lists t for an ApiVersionsResponse, sorted by key so the answer is
// deterministic.
func (t VersionTable) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]int16, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(keys))
	for _, k := range keys {
		e := kmsg.NewApiVersionsResponseApiKey()
		e.ApiKey, e.MinVersion, e.MaxVersion = k, t[k].Min, t[k].Max
		out = append(out, e)
	}
	return out
}

// answerAPIVersions builds the ApiVersions response for a request at
// version, following Kafka (KIP-511): a version newer than the listener
// knows is answered at v0 with UNSUPPORTED_VERSION and only the ApiVersions
// entry, so the client learns which version to retry with. Clients read the
// error code before choosing how to decode, which is why ApiVersions
// responses always use response header v0.
func answerAPIVersions(table VersionTable, version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	if version < 0 || version > apiVersionsMax {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		e := kmsg.NewApiVersionsResponseApiKey()
		e.ApiKey, e.MinVersion, e.MaxVersion = apiVersionsKey, 0, apiVersionsMax
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{e}
		return resp
	}
	resp.SetVersion(version)
	resp.ApiKeys = table.apiKeys()
	return resp
}
