package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/clip"
	"tidemark/storage"
)

// MaxBodyBytes is the largest request body the API reads; a larger one is a
// 413 MESSAGE_TOO_LARGE and is not read further.
const MaxBodyBytes = 1 << 20

// sameOrigin refuses a browser request from another site (its Origin is not
// the Host it asked for) before the handler runs: the lab has no login, and
// a page elsewhere must not be able to crash its brokers.
func sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !checkOrigin(c.Request()) {
			return &Error{Status: http.StatusForbidden, Code: CodeForbiddenOrigin, Message: "the Origin of this request is not this lab"}
		}
		return next(c)
	}
}

// decodeJSON reads a JSON object body of at most MaxBodyBytes into v,
// strictly: Content-Type application/json, no unknown fields, nothing after
// the object.
func decodeJSON(c echo.Context, v any) error {
	if err := checkJSONType(c); err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return parseJSON(body, v)
}

// decodeOptionalJSON is decodeJSON for a route whose body is optional: an
// empty body (none at all, Content-Length 0 or a chunked one with nothing
// in it) leaves v at its defaults, whatever its Content-Type; a body with
// anything in it must be what decodeJSON wants.
func decodeOptionalJSON(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return err
	}
	if err := checkJSONType(c); err != nil {
		return err
	}
	return parseJSON(body, v)
}

// checkJSONType refuses a body that is not sent as application/json (415).
func checkJSONType(c echo.Context) error {
	if ct := c.Request().Header.Get("Content-Type"); !isJSON(ct) {
		// Also what keeps a plain cross-site form from posting here: a JSON
		// content type needs a CORS preflight, which the lab never grants.
		return KafkaError(http.StatusUnsupportedMediaType, kerr.InvalidRequest,
			"Content-Type must be application/json, got "+strconv.Quote(clip.Bytes(ct, 60)))
	}
	return nil
}

// readBody reads the request body, at most MaxBodyBytes (413 beyond).
func readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge(r.ContentLength)
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(-1)
		}
		return nil, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "reading the body: "+err.Error())
	}
	return body, nil
}

// parseJSON decodes body, one JSON object, into v: no unknown fields,
// valid UTF-8, nothing after the object.
func parseJSON(body []byte, v any) error {
	if body = bytes.TrimSpace(body); len(body) == 0 || body[0] != '{' {
		// Every body is an object; null would decode to an all-default request.
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "the body must be a JSON object")
	}
	if !utf8.Valid(body) {
		// encoding/json would replace the bad bytes with U+FFFD, silently
		// changing a key or a record's value.
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "the body is not valid UTF-8")
	}
	if err := duplicateName(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "malformed JSON body: "+clip.Bytes(jsonProblem(err), 200))
	}
	if _, err := dec.Token(); err != io.EOF {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "malformed JSON body: data after the JSON value")
	}
	return nil
}

// duplicateName refuses a body that names a field twice in one object, at
// any depth ({"acks":"1","acks":"all"}): encoding/json keeps the last and
// says nothing, so the request would do what its sender may not have
// meant. jsontext rejects duplicate names by default; a body it finds
// malformed otherwise is left for encoding/json to describe.
func duplicateName(body []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		_, err := dec.ReadToken()
		if err == nil {
			continue
		}
		var se *jsontext.SyntacticError
		if !errors.As(err, &se) || !errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return nil
		}
		// The field as a JSON pointer without its leading "/":
		// "acks", "records/1/key".
		name := strconv.Quote(clip.Bytes(strings.TrimPrefix(string(se.JSONPointer), "/"), 100))
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "malformed JSON body: "+name+" is given twice").
			withKey("form.duplicate-key", name)
	}
}

// jsonProblem says what is wrong with a body in the request's own terms: a
// value of the wrong type names its field and the JSON it wants, not the Go
// struct behind it.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	want := "a " + te.Type.Kind().String()
	switch te.Type.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer ≥ 0"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Struct, reflect.Map:
		want = "an object"
	}
	field := te.Field
	if field == "" {
		field = "the body"
	}
	return strconv.Quote(field) + " must be " + want + ", got " + te.Value
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

func tooLarge(n int64) *Error {
	msg := "the body is larger than " + strconv.Itoa(MaxBodyBytes) + " bytes"
	if n > 0 {
		msg = "the body is " + strconv.FormatInt(n, 10) + " bytes; the limit is " + strconv.Itoa(MaxBodyBytes)
	}
	return KafkaError(http.StatusRequestEntityTooLarge, kerr.MessageTooLarge, msg)
}

// configValue is one config value in a request: a JSON string, number or
// boolean (kept as Kafka spells it), or null (back to the default).
type configValue struct {
	v   string
	set bool
}

func (cv *configValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*cv = configValue{}
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*cv = configValue{s, true}
	case string(b) == "true" || string(b) == "false":
		*cv = configValue{string(b), true}
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return errors.New("a config value must be a string, number, boolean or null")
		}
		*cv = configValue{n.String(), true}
	}
	return nil
}

// topicParam is the {topic} path parameter, checked against Kafka's naming
// rule (400 INVALID_TOPIC_EXCEPTION) before anything looks it up.
func topicParam(c echo.Context) (string, error) {
	name := c.Param("topic")
	if err := storage.ValidateTopicName(name); err != nil {
		return "", LabError(err)
	}
	return name, nil
}

// pathPartition resolves the :topic and :partition path parameters against
// snap: 400 for a bad name or number, 404 for an unknown topic or partition.
func pathPartition(c echo.Context, snap *events.Snapshot) (string, *events.Partition, error) {
	name, err := topicParam(c)
	if err != nil {
		return "", nil, err
	}
	t, err := snapTopic(snap, name)
	if err != nil {
		return "", nil, err
	}
	p, err := partitionParam(c, t)
	if err != nil {
		return "", nil, err
	}
	return name, p, nil
}

// snapTopic finds a topic in the snapshot (404 UNKNOWN_TOPIC_OR_PARTITION).
func snapTopic(s *events.Snapshot, name string) (*events.Topic, error) {
	if t := s.Topic(name); t != nil {
		return t, nil
	}
	return nil, noTopic(name)
}

// noTopic is the error for a topic the lab does not have.
func noTopic(name string) error {
	return KafkaError(http.StatusNotFound, kerr.UnknownTopicOrPartition, "no topic "+strconv.Quote(name))
}

// partitionParam is the {partition} path parameter: an integer (else 400)
// naming one of the topic's partitions (else 404).
func partitionParam(c echo.Context, t *events.Topic) (*events.Partition, error) {
	raw := c.Param("partition")
	p, err := strconv.ParseInt(raw, 10, 32)
	if err != nil {
		return nil, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "partition must be an integer from 0 to 2147483647, got "+strconv.Quote(clip.Bytes(raw, 40)))
	}
	for i := range t.Partitions {
		if int64(t.Partitions[i].Partition) == p {
			return &t.Partitions[i], nil
		}
	}
	return nil, KafkaError(http.StatusNotFound, kerr.UnknownTopicOrPartition,
		"topic "+t.Name+" has partitions 0.."+strconv.Itoa(len(t.Partitions)-1)+", not "+raw)
}

// brokerParam is the {id} path parameter: an integer (else 400) naming a
// broker of the lab (else 404 BROKER_NOT_AVAILABLE).
func brokerParam(c echo.Context, s *events.Snapshot) (int32, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 32)
	if err != nil {
		return 0, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "broker id must be an integer from 1 to 2147483647, got "+strconv.Quote(clip.Bytes(raw, 40)))
	}
	if s.Broker(int32(id)) == nil {
		return 0, KafkaError(http.StatusNotFound, kerr.BrokerNotAvailable, "no broker "+strconv.FormatInt(id, 10)+"; the brokers are "+brokerRange(s)).
			withKey("control.no-broker", strconv.FormatInt(id, 10), brokerRange(s))
	}
	return int32(id), nil
}

func brokerRange(s *events.Snapshot) string {
	if len(s.Brokers) == 0 {
		return "none"
	}
	return strconv.Itoa(int(s.Brokers[0].ID)) + ".." + strconv.Itoa(int(s.Brokers[len(s.Brokers)-1].ID))
}

// queryOffset parses an optional non-negative offset query parameter; absent
// gives def.
func queryOffset(c echo.Context, name string, def int64) (int64, error) {
	if c.QueryParam(name) == "" {
		return def, nil
	}
	v, err := queryUint(c, name, 0, math.MaxInt64)
	return int64(v), err
}

// queryLimit parses an optional limit in [1, maxV]; absent gives def.
func queryLimit(c echo.Context, def, maxV int) (int, error) {
	v, err := queryUint(c, "limit", uint64(def), uint64(maxV))
	if err != nil {
		return 0, err
	}
	if v == 0 {
		return 0, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "limit must be between 1 and "+strconv.Itoa(maxV))
	}
	return int(v), nil
}

// notImplemented answers for a control the Lab does not offer.
func notImplemented(what string) *Error {
	return &Error{Status: http.StatusNotImplemented, Code: CodeNotImplemented, Message: "this lab cannot " + what}
}
