// Package outage measures when the service could not reach MySQL, in one record every
// API and worker shares in Redis (on Redis' clock), and works out the deadlines of the
// windows such outages do not count against: an order's pay window and a group's
// window. While MySQL does not answer, a buyer cannot pay and the shop cannot confirm a
// payment, so the time an outage took from a window is given back to it.
//
// Each process runs a Monitor that probes MySQL and reports to the Record; the outages
// are the union of what every process reported (a partial outage seen by one instance
// counts for all), with outages closer than MergeGap counted as one. How far the
// measured outage can be from the real one (its error bound) is written in
// docs/internals/mysql-outages.md.
package outage

//go:generate go test -run ^TestScriptFiles$ -args -update

import "time"

// MaxGrace is the most time outages give back to one window: an outage longer than that
// ends the grace, so a sale's orders cannot be held forever.
const MaxGrace = time.Hour

// Span is a time during which MySQL did not answer, on Redis' clock.
type Span struct{ From, To time.Time }

// Outages are the MySQL outages as the record held them at one instant.
type Outages struct {
	// Spans are the outages, oldest first, none overlapping.
	Spans []Span
	// Open is whether the last span was still going on when the record was read; it
	// then ends at the read, and counts until the deadline's now (Deadline).
	Open bool
}

// Deadline returns the deadline in force, at now, of a window set to run from start to
// end: end, plus the time the outages took from the window (each outage's part after
// start and before the deadline as it has grown so far), at most MaxGrace in all. An
// outage still going on counts until now, so a window that had time left when it began
// does not end while it lasts (up to MaxGrace).
func (o Outages) Deadline(start, end, now time.Time) time.Time {
	d := end
	for i, s := range o.Spans {
		from, to := later(s.From, start), s.To
		if o.Open && i == len(o.Spans)-1 {
			to = later(to, now)
		}
		if !from.Before(d) {
			break // this outage, and every later one, began after the window had ended
		}
		if to.After(from) {
			d = d.Add(to.Sub(from))
		}
	}
	if limit := end.Add(MaxGrace); d.After(limit) {
		return limit
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
