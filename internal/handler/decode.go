package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"seckill/internal/sale"
)

// maxBody is the largest request body the API reads.
const maxBody = 64 << 10

// decode reads the request's JSON object into v. Unknown fields are ignored, names
// that differ from a field's only in case too (encoding/json would take "QUANTITY" for
// "quantity"); a body that is not one JSON object, or a value of the wrong type, is an
// *invalidRequest naming the field; a body over 64 KiB is errTooLarge, one that does
// not arrive within the body timeout errBodyTimeout (readBody).
//
// The body is read whole and decoded by json.Unmarshal, which takes exactly one value;
// only a body it refuses is decoded again as a stream, to say what is wrong with it.
func (m *middleware) decode(c *gin.Context, v any) error {
	body, err := m.readBody(c)
	if err != nil {
		return err
	}
	return decodeBody(body, v)
}

// readBody reads the request's body whole, which must arrive within the body timeout
// (SECKILL_BODY_TIMEOUT) from now: the connection's read deadline bounds the whole
// body, not the gap between two reads, and is lifted once it is read, so a handler
// that then waits on storage is not cut off. A body that has not arrived in time is
// errBodyTimeout (408, and the connection closed); one over 64 KiB is errTooLarge.
func (m *middleware) readBody(c *gin.Context) ([]byte, error) {
	conn := readDeadline(c.Writer) // nil for a writer without one (httptest's): unbounded
	if conn != nil {
		_ = conn.SetReadDeadline(time.Now().Add(m.bodyTimeout))
	}
	body, err := io.ReadAll(c.Request.Body)
	if conn != nil {
		_ = conn.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return nil, bodyError(err)
	}
	return body, nil
}

// bodyError is the answer to a body whose reading failed with err. (A function of its
// own: the targets of errors.As live on the heap, which the body that arrived whole,
// every purchase's, does not pay for.)
func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		return errTooLarge
	case errors.As(err, &ne) && ne.Timeout():
		return errBodyTimeout
	}
	return errUnreadableBody
}

// deadliner sets the read deadline of a request's connection.
type deadliner interface{ SetReadDeadline(time.Time) error }

// readDeadline finds the connection's read deadline under w, as
// http.ResponseController does, without its allocation per call (an error for a writer
// without one); nil when there is none.
func readDeadline(w http.ResponseWriter) deadliner {
	for {
		switch t := w.(type) {
		case deadliner:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// decodeBody is decode of a body already read. A body that is not UTF-8 is refused:
// encoding/json would replace its bytes with U+FFFD and store what was not sent.
func decodeBody(body []byte, v any) error {
	if !utf8.Valid(body) {
		return errNotUTF8
	}
	body = exactNames(body, v)
	if json.Unmarshal(body, v) == nil {
		return nil
	}
	return explain(bytes.NewReader(body), v)
}

// exactNames returns body without the members of its object whose names are not a
// field of v's but equal one's under case folding: encoding/json matches names without
// regard to case, and the last of "quantity" and "QUANTITY" would win. A body of
// lower-case ASCII without escapes (every purchase) is returned as it is, unread.
func exactNames(body []byte, v any) []byte {
	if !slices.ContainsFunc(body, func(b byte) bool { return b >= 'A' && b <= 'Z' || b == '\\' || b >= 0x80 }) {
		return body
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return body // not an object: Unmarshal into v says what is wrong
	}
	names := fieldNames(reflect.TypeOf(v))
	dropped := false
	for name := range members {
		if names[name] {
			continue
		}
		for field := range names {
			if strings.EqualFold(name, field) {
				delete(members, name)
				dropped = true
				break
			}
		}
	}
	if !dropped {
		return body
	}
	out, err := json.Marshal(members)
	if err != nil {
		return body
	}
	return out
}

// fieldNames are the JSON names of a struct's fields, those of embedded structs too.
func fieldNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return names
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			maps.Copy(names, fieldNames(f.Type))
		case name != "":
			names[name] = true
		case f.IsExported():
			names[f.Name] = true
		}
	}
	return names
}

// explain decodes a body as a stream and says what is wrong with it.
func explain(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &invalidRequest{"the body must hold one JSON object and nothing after it"}
		}
		return nil
	}
	var tooLarge *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return errTooLarge
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &invalidRequest{fmt.Sprintf("%s must be %s", jsonField(v, typeErr.Field), kind(typeErr.Type.Kind()))}
	case errors.As(err, &typeErr):
		return errMalformedJSON
	case errors.Is(err, io.EOF):
		return &invalidRequest{"the request needs a JSON body"}
	}
	return &invalidRequest{"the body is not valid JSON"}
}

// jsonField is a type error's field as the client sent it: encoding/json puts the Go
// name of an embedded struct (roomRequest) before the fields it brings.
func jsonField(v any, field string) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for t != nil && t.Kind() == reflect.Struct {
		head, rest, ok := strings.Cut(field, ".")
		f, found := t.FieldByName(head)
		if !ok || !found || !f.Anonymous {
			break
		}
		field, t = rest, f.Type
	}
	return field
}

// kind names the JSON type of a Go kind for a message.
func kind(k reflect.Kind) string {
	switch {
	case k >= reflect.Int && k <= reflect.Uint64:
		return "an integer in range"
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "a boolean (true or false)"
	}
	return "of the documented type"
}

// timeField parses an RFC 3339 time with a zone.
func timeField(name string, v *string) (*time.Time, error) {
	if v == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(*v)) // RFC 3339 takes a lower-case t and z too
	if err != nil {
		return nil, &invalidRequest{name + " must be an RFC 3339 time with a zone, such as 2026-11-21T20:00:00Z"}
	}
	return &t, nil
}

// required returns the error for a missing field.
func required(name string) error { return &invalidRequest{name + " is required"} }

// pathID parses an activity id in the path, canonical only (sale.ParseID).
func pathID(c *gin.Context, name string) (int64, bool) { return sale.ParseID(c.Param(name)) }
