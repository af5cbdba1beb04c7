package events

//go:generate go run ./internal/decodegen

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// DecodeMessage decodes one websocket Message from its JSON, as
// encoding/json would, without reflection: the WASM panel decodes with it,
// because encoding/json (and the reflection it keeps alive) was a third of
// the panel's size. Unknown fields are skipped; a field of the wrong type or
// malformed JSON is an error. The methods per struct type are generated
// from the types' json tags (decode_gen.go, events/internal/decodegen);
// this file holds the primitives they call. TestDecodeMessageMatchesJSON
// checks the whole against encoding/json.
func DecodeMessage(data string) (Message, error) {
	d := decoder{b: data}
	var m Message
	d.decodeMessage(&m)
	d.end()
	return m, d.err
}

// DecodeStrings decodes a JSON object of strings, such as the panel's
// catalogue.
func DecodeStrings(data string) (map[string]string, error) {
	d := decoder{b: data}
	m := d.strMap()
	d.end()
	return m, d.err
}

// errSyntax is the error of every malformed input: the panel only logs it.
var errSyntax = errors.New("events: malformed JSON message")

// decoder reads JSON from b at i. After the first error it reads nothing
// more: every method then returns zero values.
type decoder struct {
	b     string // a string, so keys are slices of it, not copies
	i     int
	err   error
	depth int // of the values skip is inside
}

// maxSkipDepth bounds how deep skip follows unknown values.
const maxSkipDepth = 64

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errSyntax
	}
	d.i = len(d.b)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte that is not white space (0 at the end).
func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) expect(c byte) bool {
	if d.peek() != c {
		d.fail()
		return false
	}
	d.i++
	return true
}

// end checks that nothing but white space follows the value.
func (d *decoder) end() {
	if d.peek() != 0 {
		d.fail()
	}
}

// literal consumes word (true, false, null) if it comes next.
func (d *decoder) literal(word string) bool {
	d.ws()
	if len(d.b)-d.i >= len(word) && d.b[d.i:d.i+len(word)] == word {
		d.i += len(word)
		return true
	}
	return false
}

// null consumes a null if one comes next.
func (d *decoder) null() bool { return d.literal("null") }

// object calls field for each key of an object (or of none, for null);
// field must consume the value.
func (d *decoder) object(field func(key string)) {
	if d.null() || !d.expect('{') {
		return
	}
	if d.peek() == '}' {
		d.i++
		return
	}
	for d.err == nil {
		k := d.key()
		if !d.expect(':') {
			return
		}
		field(k)
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return
		default:
			d.fail()
		}
	}
}

// array calls elem for each element of an array (or of none, for null);
// elem must consume it.
func (d *decoder) array(elem func()) {
	if d.null() || !d.expect('[') {
		return
	}
	if d.peek() == ']' {
		d.i++
		return
	}
	for d.err == nil {
		elem()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return
		default:
			d.fail()
		}
	}
}

// key reads an object's key: a slice of the input, not a copy (keys are
// only compared, or copied by the caller that keeps them), unless it has
// escapes.
func (d *decoder) key() string {
	if d.peek() == '"' {
		for j := d.i + 1; j < len(d.b); j++ {
			switch d.b[j] {
			case '"':
				k := d.b[d.i+1 : j]
				d.i = j + 1
				return k
			case '\\':
				return d.str()
			}
			if d.b[j] < 0x20 {
				break
			}
		}
	}
	return d.str()
}

// str reads a string (null reads as ""): a copy, so what the panel keeps
// does not hold the whole message in memory.
func (d *decoder) str() string {
	if d.null() || !d.expect('"') {
		return ""
	}
	start := d.i
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := strings.Clone(d.b[start:d.i])
			d.i++
			return s
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			d.fail()
			return ""
		default:
			d.i++
		}
	}
	d.fail()
	return ""
}

// escaped finishes a string that started at start and has escapes from
// d.i on.
func (d *decoder) escaped(start int) string {
	out := []byte(d.b[start:d.i])
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(out)
		case c < 0x20:
			d.fail()
			return ""
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			break
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := d.hex4()
			if r >= 0xD800 && r < 0xDC00 { // a surrogate pair's first half
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if r2 = d.hex4(); r2 < 0xDC00 || r2 >= 0xE000 {
						d.i, r2 = save, -1 // not its second half: leave it
					}
				}
				if r2 >= 0 {
					r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
				} else {
					r = utf8.RuneError
				}
			} else if r >= 0xDC00 && r < 0xE000 {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			d.fail()
			return ""
		}
	}
	d.fail()
	return ""
}

// hex4 reads the 4 hex digits of a \u escape.
func (d *decoder) hex4() rune {
	if d.i+4 > len(d.b) {
		d.fail()
		return 0
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			d.fail()
			return 0
		}
	}
	d.i += 4
	return r
}

// number returns the text of a number.
func (d *decoder) number() string {
	d.ws()
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		d.i++
	}
	return d.b[start:d.i]
}

// int reads an integer that fits in bits (null reads as 0).
func (d *decoder) int(bits uint) int64 {
	if d.null() {
		return 0
	}
	n := d.number()
	neg := len(n) > 0 && n[0] == '-'
	if neg {
		n = n[1:]
	}
	u, ok := parseUint(n, 1<<(bits-1))
	if !ok || !neg && u == 1<<(bits-1) {
		d.fail()
		return 0
	}
	if neg {
		return -int64(u)
	}
	return int64(u)
}

// parseUint parses decimal digits up to limit (strconv's parsers would
// bring their error type, and its quoting, into the panel).
func parseUint(s string, limit uint64) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var v uint64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' || v > (limit-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

func (d *decoder) i32() int32 { return int32(d.int(32)) }
func (d *decoder) i64() int64 { return d.int(64) }

// f64 reads a number as a float64: its digits as an integer, scaled by a
// power of ten. That is exact for the short decimals the lab sends (a
// clock rate of 0.25); longer ones may differ from strconv in the last
// bits: fraction digits past 15 significant ones are dropped (a ratio such
// as 0.9183673469387755 has 16, more than 2^53 holds as an integer).
func (d *decoder) f64() float64 {
	if d.null() {
		return 0
	}
	n := d.number()
	mant, exp, hasExp := strings.Cut(strings.ToLower(n), "e")
	neg := strings.HasPrefix(mant, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	if sig := len(strings.TrimLeft(whole+frac, "0")); sig > 15 {
		frac = frac[:max(0, len(frac)-(sig-15))]
	}
	u, ok := parseUint(whole+frac, 1<<53)
	scale := -len(frac)
	if hasExp {
		scale += d.expInt(exp)
	}
	if !ok || whole == "" {
		d.fail()
		return 0
	}
	v := float64(u)
	for ; scale > 0; scale-- {
		v *= 10
	}
	if scale < 0 {
		p := 1.0
		for ; scale < 0; scale++ {
			p *= 10
		}
		v /= p
	}
	if neg {
		v = -v
	}
	return v
}

// expInt reads a float's exponent (at most three digits).
func (d *decoder) expInt(s string) int {
	neg := strings.HasPrefix(s, "-")
	u, ok := parseUint(strings.TrimLeft(s, "+-"), 999)
	if !ok {
		d.fail()
		return 0
	}
	if neg {
		return -int(u)
	}
	return int(u)
}

func (d *decoder) u64() uint64 {
	if d.null() {
		return 0
	}
	v, ok := parseUint(d.number(), 1<<64-1)
	if !ok {
		d.fail()
	}
	return v
}

func (d *decoder) bool() bool {
	switch {
	case d.literal("true"):
		return true
	case d.literal("false"), d.null():
		return false
	}
	d.fail()
	return false
}

// skip consumes a value of any type.
func (d *decoder) skip() {
	if d.depth++; d.depth > maxSkipDepth {
		d.fail()
	}
	defer func() { d.depth-- }()
	switch d.peek() {
	case '{':
		d.object(func(string) { d.skip() })
	case '[':
		d.array(d.skip)
	case '"':
		d.str()
	case 't', 'f', 'n':
		if !d.literal("true") && !d.literal("false") && !d.null() {
			d.fail()
		}
	default:
		if d.number() == "" {
			d.fail()
		}
	}
}

// time reads an RFC 3339 time as encoding/json writes it
// (2006-01-02T15:04:05.999999999Z07:00), in UTC; null reads as the zero
// time.
func (d *decoder) time() Time {
	s := d.str()
	if s == "" || d.err != nil {
		return Time{}
	}
	t, ok := parseRFC3339(s)
	if !ok {
		d.fail()
	}
	return t
}

// parseRFC3339 parses s without the time package's layout machinery.
func parseRFC3339(s string) (Time, bool) {
	num := func(from, n int) int {
		if from+n > len(s) {
			return -1
		}
		v := 0
		for _, c := range []byte(s[from : from+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return Time{}, false
	}
	year, mon, day, hh, mm, ss := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || mon < 1 || mon > 12 || day < 1 || hh < 0 || mm < 0 || ss < 0 {
		return Time{}, false
	}
	i, nsec := 19, 0
	if s[i] == '.' {
		i++
		digits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if digits < 9 {
				nsec = nsec*10 + int(s[i]-'0')
				digits++
			}
			i++
		}
		for ; digits < 9; digits++ {
			nsec *= 10
		}
	}
	if i >= len(s) {
		return Time{}, false
	}
	offset := 0
	switch s[i] {
	case 'Z':
		i++
	case '+', '-':
		oh, om := num(i+1, 2), num(i+4, 2)
		if oh < 0 || om < 0 || i+3 >= len(s) || s[i+3] != ':' {
			return Time{}, false
		}
		offset = (oh*60 + om) * 60
		if s[i] == '-' {
			offset = -offset
		}
		i += 6
	default:
		return Time{}, false
	}
	if i != len(s) {
		return Time{}, false
	}
	// In UTC: the same instant; a zone would bring the time package's
	// zone code into the panel.
	// Days since 1970-01-01 of the proleptic Gregorian date (H. Hinnant's
	// days_from_civil): time.Date would bring the zone rules in.
	y := year
	if mon <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (mon + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era)*146097 + int64(doe) - 719468
	sec := days*86400 + int64(hh*3600+mm*60+ss) - int64(offset)
	return unixUTC(sec, int64(nsec)), true
}

func (d *decoder) i32s() (v []int32) {
	if d.list() {
		v = []int32{}
	}
	d.array(func() { v = append(v, d.i32()) })
	return v
}

func (d *decoder) i64s() (v []int64) {
	if d.list() {
		v = []int64{}
	}
	d.array(func() { v = append(v, d.i64()) })
	return v
}

func (d *decoder) strs() (v []string) {
	if d.list() {
		v = []string{}
	}
	d.array(func() { v = append(v, d.str()) })
	return v
}

// list reports whether an array (not null) comes next: [] decodes as an
// empty slice, null as nil, as encoding/json makes them. (Not a generic
// function: its dictionaries would mark the types as used in interfaces
// and keep every String method of their fields, time's formatting among
// them, in the panel.)
func (d *decoder) list() bool { return d.peek() == '[' }

func (d *decoder) strMap() map[string]string {
	if d.null() {
		return nil
	}
	m := map[string]string{}
	d.object(func(k string) { m[strings.Clone(k)] = d.str() })
	return m
}
