package store

import (
	"context"
	"sync/atomic"
	"time"
)

// ArchivedAgain is how long after its archive a sale is still read again by an
// ActivityList: beyond it, the one the list read before is kept. It covers the
// difference between the clock of the worker that archived a sale and the reader's.
const ArchivedAgain = time.Hour

// ActivityList reads every activity, newest first, again and again (the public list
// of an API process, once a second while a crowd reads it). An archived sale never
// changes again, so after its first read it asks MySQL only for the sales not archived,
// archived within ArchivedAgain of its last read, or newer than the newest it read, and
// keeps the other archived ones: a shop's history costs a read nothing. A sale it had
// live that is not among them (archived, by its worker's clock, long before its last
// read) makes a whole read. One Read at a time.
type ActivityList struct {
	activities *Activities
	last       atomic.Pointer[listed]
}

// listed is what a read returned, and when it began.
type listed struct {
	rows []Activity
	at   time.Time
}

// NewList returns an ActivityList that has read nothing yet.
func (s *Activities) NewList() *ActivityList { return &ActivityList{activities: s} }

// Read returns every activity, newest first.
func (l *ActivityList) Read(ctx context.Context) ([]Activity, error) {
	at := time.Now() // compared with archived_at, which a worker's clock wrote
	last := l.last.Load()
	if last == nil {
		return l.readAll(ctx, at)
	}
	since := listSince{archivedFrom: last.at.Add(-ArchivedAgain)}
	if len(last.rows) > 0 {
		since.after = last.rows[0].ID
	}
	read, err := l.activities.listActivities(ctx, &since)
	if err != nil {
		return nil, err
	}
	fresh := make(map[int64]bool, len(read))
	for _, a := range read {
		fresh[a.ID] = true
	}
	all, i := make([]Activity, 0, len(last.rows)+len(read)), 0 // the two lists, newest first, merged
	for _, a := range last.rows {
		switch {
		case fresh[a.ID]:
			continue
		case a.ArchivedAt == nil:
			return l.readAll(ctx, at)
		}
		for ; i < len(read) && read[i].ID > a.ID; i++ {
			all = append(all, read[i])
		}
		all = append(all, a)
	}
	all = append(all, read[i:]...)
	l.last.Store(&listed{rows: all, at: at})
	return all, nil
}

// readAll reads every activity, and keeps them for the next Read.
func (l *ActivityList) readAll(ctx context.Context, at time.Time) ([]Activity, error) {
	rows, err := l.activities.listActivities(ctx, nil)
	if err == nil {
		l.last.Store(&listed{rows: rows, at: at})
	}
	return rows, err
}

// Last returns what the last Read that succeeded returned; nil before any.
func (l *ActivityList) Last() []Activity {
	if last := l.last.Load(); last != nil {
		return last.rows
	}
	return nil
}

// listSince is what listActivities leaves out: the sales archived before archivedFrom
// whose id is at most after.
type listSince struct {
	archivedFrom time.Time
	after        int64
}

// listActivities returns the activities, newest first: every one when since is nil,
// else all but those since leaves out.
func (s *Activities) listActivities(ctx context.Context, since *listSince) ([]Activity, error) {
	q := s.db.WithContext(ctx).Preload("Variants", variantsInOrder).Order("id DESC")
	if since != nil {
		q = q.Where("archived_at IS NULL OR archived_at >= ? OR id > ?", since.archivedFrom, since.after)
	}
	var as []Activity
	err := q.Find(&as).Error
	return as, err
}
