package sale

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends o as encoding/json writes it (the same fields, in the same order,
// the same omissions and escapes), without its reflection: every accepted purchase
// answers one, and writing it by hand costs the API a fraction of what reflection
// does. TestAppendJSONIsMarshal holds it to json.Marshal, every field set and none. An
// error is a time json.Marshal refuses too (a year past 9999).
func (o *Order) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, o.ID)
	b = append(b, `,"activity_id":`...)
	b = strconv.AppendInt(b, o.ActivityID, 10)
	b = append(b, `,"buyer":`...)
	b = appendString(b, string(o.Buyer))
	if o.UserID != 0 {
		b = append(b, `,"user_id":`...)
		b = strconv.AppendInt(b, o.UserID, 10)
	}
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(o.Quantity), 10)
	b = append(b, `,"amount_cents":`...)
	b = strconv.AppendInt(b, o.AmountCents, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, o.Status)
	var err error
	if b, err = o.CreatedAt.AppendJSON(append(b, `,"created_at":`...)); err != nil {
		return nil, err
	}
	if b, err = o.ExpiresAt.AppendJSON(append(b, `,"expires_at":`...)); err != nil {
		return nil, err
	}
	if o.PaidAt != nil {
		if b, err = o.PaidAt.AppendJSON(append(b, `,"paid_at":`...)); err != nil {
			return nil, err
		}
	}
	b = appendOptional(b, `,"paid_by":`, o.PaidBy)
	b = appendOptional(b, `,"failure_reason":`, o.FailureReason)
	b = appendOptional(b, `,"group_id":`, o.GroupID)
	b = appendOptional(b, `,"checkout_url":`, o.CheckoutURL)
	if o.RefundedAt != nil {
		if b, err = o.RefundedAt.AppendJSON(append(b, `,"refunded_at":`...)); err != nil {
			return nil, err
		}
	}
	if o.Restock != nil {
		b = strconv.AppendBool(append(b, `,"restock":`...), *o.Restock)
	}
	b = appendOptional(b, `,"variant":`, o.Variant)
	if o.Offered {
		b = append(b, `,"offered":true`...)
	}
	if o.EarlyAccess {
		b = append(b, `,"early_access":true`...)
	}
	return append(b, '}'), nil
}

// appendOptional appends a string field (name is `,"name":`) unless s is empty
// (omitempty).
func appendOptional(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, name...), s)
}

// appendString appends s quoted as encoding/json quotes it: printable ASCII but the
// characters it escapes as is, anything else through json.Marshal (rare: a buyer's
// subject or a variant's name out of that range).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
