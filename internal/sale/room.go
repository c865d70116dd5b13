package sale

import (
	"time"

	"seckill/internal/stock"
	"seckill/internal/store"
)

// RoomSettings are a sale's waiting room as the activity shows it (internal/waitingroom runs
// the line itself).
type RoomSettings struct {
	WaitingRoom bool `json:"waiting_room"`
	// AdmitPerSecond is set once the sale has had a waiting room; 0 before.
	AdmitPerSecond  int  `json:"admit_per_second"`
	PassTTLSeconds  int  `json:"pass_ttl_seconds"`
	PrequeueSeconds int  `json:"prequeue_seconds"`
	Challenge       bool `json:"challenge"`
	// ChallengeCost is the proof-of-work's maxnumber: a joiner tries on average half
	// as many SHA-256 hashes.
	ChallengeCost int `json:"challenge_cost"`
}

// Bounds and defaults of the waiting room's settings.
const (
	MaxAdmitPerSecond      = 100_000
	MinPassTTL             = 30
	MaxPassTTL             = 3600
	DefaultPassTTL         = 300
	MaxPrequeue            = 86400
	DefaultPrequeue        = 600
	MinChallengeCost       = 1_000
	MaxChallengeCost       = 10_000_000
	DefaultChallengeCost   = 50_000
	errRoomAdmitPerSecond  = "must be between 1 and 100000"
	errRoomPassTTL         = "must be between 30 and 3600"
	errRoomPrequeueSeconds = "must be between 0 and 86400"
	errRoomChallengeCost   = "must be between 1000 and 10000000"
)

// defaultRoom is a new sale's room: off, with the contract's defaults.
var defaultRoom = RoomSettings{PassTTLSeconds: DefaultPassTTL, PrequeueSeconds: DefaultPrequeue,
	ChallengeCost: DefaultChallengeCost}

// RoomPatch is an admin's change to a sale's waiting room; nil fields stay as they are
// (a new sale starts from the defaults).
type RoomPatch struct {
	WaitingRoom     *bool
	AdmitPerSecond  *int
	PassTTLSeconds  *int
	PrequeueSeconds *int
	Challenge       *bool
	ChallengeCost   *int
}

// Empty reports whether the patch changes nothing.
func (p RoomPatch) Empty() bool {
	return p.WaitingRoom == nil && p.AdmitPerSecond == nil && p.PassTTLSeconds == nil &&
		p.PrequeueSeconds == nil && p.Challenge == nil && p.ChallengeCost == nil
}

// apply changes r by p and checks the result for a sale of kind; it returns a
// *FieldError for the first bad value.
func (p RoomPatch) apply(r *RoomSettings, kind string) error {
	set := func(dst *int, v *int, field, msg string, lo, hi int) error {
		if v == nil {
			return nil
		}
		if *v < lo || *v > hi {
			return &FieldError{field, msg}
		}
		*dst = *v
		return nil
	}
	for _, err := range []error{
		set(&r.AdmitPerSecond, p.AdmitPerSecond, "admit_per_second", errRoomAdmitPerSecond, 1, MaxAdmitPerSecond),
		set(&r.PassTTLSeconds, p.PassTTLSeconds, "pass_ttl_seconds", errRoomPassTTL, MinPassTTL, MaxPassTTL),
		set(&r.PrequeueSeconds, p.PrequeueSeconds, "prequeue_seconds", errRoomPrequeueSeconds, 0, MaxPrequeue),
		set(&r.ChallengeCost, p.ChallengeCost, "challenge_cost", errRoomChallengeCost, MinChallengeCost, MaxChallengeCost),
	} {
		if err != nil {
			return err
		}
	}
	if p.WaitingRoom != nil {
		r.WaitingRoom = *p.WaitingRoom
	}
	if p.Challenge != nil {
		r.Challenge = *p.Challenge
	}
	switch {
	case r.WaitingRoom && kind == KindGroup:
		return &FieldError{"waiting_room", "is only for a sale of kind sale"}
	case r.WaitingRoom && r.AdmitPerSecond == 0:
		return &FieldError{"admit_per_second", "is required with waiting_room (" + errRoomAdmitPerSecond + ")"}
	}
	return nil
}

// roomOf is the settings a stored activity has.
func roomOf(a store.Activity) RoomSettings {
	r := RoomSettings{WaitingRoom: a.WaitingRoom, PassTTLSeconds: a.PassTTLSeconds,
		PrequeueSeconds: a.PrequeueSeconds, Challenge: a.Challenge, ChallengeCost: a.ChallengeCost}
	if a.AdmitPerSecond != nil {
		r.AdmitPerSecond = *a.AdmitPerSecond
	}
	return r
}

// stored is the settings as activities' columns.
func (r RoomSettings) stored() store.Room {
	s := store.Room{WaitingRoom: r.WaitingRoom, PassTTLSeconds: r.PassTTLSeconds,
		PrequeueSeconds: r.PrequeueSeconds, Challenge: r.Challenge, ChallengeCost: r.ChallengeCost}
	if r.AdmitPerSecond > 0 {
		n := r.AdmitPerSecond
		s.AdmitPerSecond = &n
	}
	return s
}

// stock is the settings as the sale hash holds them.
func (r RoomSettings) stock() stock.Room {
	return stock.Room{On: r.WaitingRoom, AdmitPerSecond: r.AdmitPerSecond,
		PassTTL:  time.Duration(r.PassTTLSeconds) * time.Second,
		Prequeue: time.Duration(r.PrequeueSeconds) * time.Second, Challenge: r.Challenge,
		ChallengeCost: r.ChallengeCost}
}
