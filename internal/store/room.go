package store

import (
	"context"
	"time"
)

// Room is a sale's waiting room, columns of activities (migration 00007).
type Room struct {
	WaitingRoom     bool
	AdmitPerSecond  *int // set whenever WaitingRoom is
	PassTTLSeconds  int
	PrequeueSeconds int
	Challenge       bool
	ChallengeCost   int
}

// columns are the room's columns as UpdateActivity writes them.
func (r Room) columns() map[string]any {
	return map[string]any{"waiting_room": r.WaitingRoom, "admit_per_second": r.AdmitPerSecond,
		"pass_ttl_seconds": r.PassTTLSeconds, "prequeue_seconds": r.PrequeueSeconds,
		"challenge": r.Challenge, "challenge_cost": r.ChallengeCost}
}

// WaitingRooms returns the ids of the sales with a waiting room that have not ended
// by now.
func (s *Store) WaitingRooms(ctx context.Context, now time.Time) ([]int64, error) {
	var ids []int64
	err := s.db.WithContext(ctx).Model(&Activity{}).Where("waiting_room AND ends_at > ?", now).
		Order("id").Pluck("id", &ids).Error
	return ids, err
}
