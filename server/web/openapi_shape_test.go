package web

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// apiDoc is /api/v1/openapi.json's schemas, for checking real answers
// against what the document says they are.
type apiDoc struct {
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

func loadAPIDoc(t *testing.T) *apiDoc {
	t.Helper()
	var d apiDoc
	if err := json.Unmarshal(openapiDoc, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// conforms returns what in the JSON body differs from the named schema
// ("[]Name": an array of it): a
// field the schema does not declare, a value of another type, a missing
// required field, a string outside its enum. An object schema with neither
// properties nor additionalProperties is opaque (the lanes' snapshot).
func (d *apiDoc) conforms(schema string, body []byte) []string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{err.Error()}
	}
	var out []string
	ref := map[string]any{"$ref": "#/components/schemas/" + strings.TrimPrefix(schema, "[]")}
	if strings.HasPrefix(schema, "[]") {
		ref = map[string]any{"type": "array", "items": ref}
	}
	d.walk(ref, v, "$", &out)
	// One line per field, not per array element.
	seen := map[string]bool{}
	uniq := out[:0]
	for _, o := range out {
		if o = arrayIndex.ReplaceAllString(o, "[]"); !seen[o] {
			seen[o] = true
			uniq = append(uniq, o)
		}
	}
	sort.Strings(uniq)
	return uniq
}

var arrayIndex = regexp.MustCompile(`\[\d+\]`)

func (d *apiDoc) resolve(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		s = d.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
		if s == nil {
			return map[string]any{}
		}
	}
}

// merged folds allOf into one schema: the union of properties and required.
func (d *apiDoc) merged(s map[string]any) map[string]any {
	s = d.resolve(s)
	all, ok := s["allOf"].([]any)
	if !ok {
		return s
	}
	out := map[string]any{"type": "object"}
	props := map[string]any{}
	var req []any
	own := map[string]any{}
	for k, v := range s {
		if k != "allOf" {
			own[k] = v
		}
	}
	for _, x := range append(all, own) {
		for k, v := range d.merged(x.(map[string]any)) {
			switch k {
			case "properties":
				for pk, pv := range v.(map[string]any) {
					props[pk] = pv
				}
			case "required":
				req = append(req, v.([]any)...)
			default:
				out[k] = v
			}
		}
	}
	out["properties"], out["required"] = props, req
	return out
}

func (d *apiDoc) walk(schema map[string]any, v any, at string, out *[]string) {
	s := d.merged(schema)
	if alts, ok := s["oneOf"].([]any); ok {
		for _, a := range alts {
			var errs []string
			d.walk(a.(map[string]any), v, at, &errs)
			if len(errs) == 0 {
				return
			}
		}
		*out = append(*out, fmt.Sprintf("%s: matches none of oneOf", at))
		return
	}
	if v == nil {
		if s["nullable"] != true && s["type"] != nil {
			*out = append(*out, fmt.Sprintf("%s: null, schema says %v", at, s["type"]))
		}
		return
	}
	typ, _ := s["type"].(string)
	got := jsonType(v)
	if typ != "" && got != typ && !(typ == "number" && got == "integer") {
		*out = append(*out, fmt.Sprintf("%s: %s, schema says %s", at, got, typ))
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || fmt.Sprint(e) == fmt.Sprint(v)
		}
		if !found {
			*out = append(*out, fmt.Sprintf("%s: %v not in enum %v", at, v, enum))
		}
	}
	switch v := v.(type) {
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range v {
				d.walk(items, x, fmt.Sprintf("%s[%d]", at, i), out)
			}
		}
	case map[string]any:
		props, hasProps := s["properties"].(map[string]any)
		extra, hasExtra := s["additionalProperties"].(map[string]any)
		if !hasProps && !hasExtra {
			return // opaque
		}
		for _, r := range asSlice(s["required"]) {
			if _, ok := v[r.(string)]; !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: required, missing", at, r))
			}
		}
		for k, x := range v {
			switch p, ok := props[k].(map[string]any); {
			case ok:
				d.walk(p, x, at+"."+k, out)
			case hasExtra:
				d.walk(extra, x, at+"."+k, out)
			default:
				*out = append(*out, fmt.Sprintf("%s.%s: not in the schema", at, k))
			}
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func jsonType(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	}
	return "null"
}
