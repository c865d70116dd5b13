// Package waitingroom is the sales' waiting rooms. A room keeps its buyers in a line
// (the word of the API's routes, /line, and of its Redis keys): one place per buyer per
// sale, a proof-of-work first when the sale asks for one; everyone who joined before the
// start is ordered by a lottery and later joiners follow in arrival order; the room
// admits them at the sale's rate while its units can serve them, and an admitted buyer
// gets a pass (internal/auth.Passes) that the purchase path checks without a storage
// call. A room lives in Redis beside its sale, in the sale's slot; every instant (the
// start, the end, a pass's expiry) is judged by Redis' clock.
package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/altcha"
	"seckill/internal/apitime"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/snapshot"
	"seckill/internal/stock"
)

// Errors of the line. Handlers map them, and stock.ErrEnded and stock.ErrSoldOut, to
// the HTTP contract.
var (
	ErrNoSale            = errors.New("no such sale")
	ErrNoWaitingRoom     = errors.New("this sale has no waiting room")
	ErrNotOpen           = errors.New("the line is not open yet")
	ErrChallengeRequired = errors.New("joining this line needs a solved challenge (altcha)")
	ErrChallengeFailed   = errors.New("the challenge's solution is wrong, expired or used before")
	ErrNoTicket          = errors.New("you have not joined this line")
)

// Ticket statuses.
const (
	Waiting  = "waiting"
	Admitted = "admitted"
	Expired  = "expired"
	SoldOut  = "sold_out"
)

// Ticket is a buyer's place in a sale's line.
type Ticket struct {
	ActivityID int64 `json:"activity_id"`
	buyer.Named
	Status string `json:"status"`
	// Position is the place in line (1 = first) counting the admitted buyers before;
	// Ahead is how many waiting buyers are before this one.
	Position int64 `json:"position"`
	Ahead    int64 `json:"ahead"`
	// Place is the ticket's place (places.go), fixed at the join: the ticket is
	// admitted once the line's status reads admitted_through >= Place.
	Place     int64 `json:"place"`
	UnitsLeft int64 `json:"units_left"`
	// EstimatedWaitSeconds is the time until the start, if it is to come, plus the
	// time to admit the buyers ahead at the sale's rate.
	EstimatedWaitSeconds int64         `json:"estimated_wait_seconds"`
	AdmittedAt           *apitime.Time `json:"admitted_at,omitempty"`
	// Pass is present once admitted: send it as X-Sale-Pass with each purchase.
	Pass          string        `json:"pass,omitempty"`
	PassExpiresAt *apitime.Time `json:"pass_expires_at,omitempty"`
}

// Rooms runs the waiting rooms of every sale.
type Rooms struct {
	rdb      redis.UniversalClient
	passes   *auth.Passes
	pow      *altcha.Issuer
	now      func() time.Time // nil: Redis' clock
	draw     func() (int64, error)
	statuses *snapshot.Map[int64, statusAnswer]
}

// New returns the Rooms on rdb that signs passes with passes and challenges with pow.
func New(rdb redis.UniversalClient, passes *auth.Passes, pow *altcha.Issuer) *Rooms {
	return &Rooms{rdb: rdb, passes: passes, pow: pow, draw: lotteryDraw,
		statuses: snapshot.NewMap[int64, statusAnswer]("line status", StatusAge)}
}

// SetClock makes the line judge every instant by now instead of Redis' clock, and age
// its statuses by it (tests).
func (r *Rooms) SetClock(now func() time.Time) {
	r.now = now
	r.statuses.SetClock(now)
}

// SetDraw replaces the lottery's draws (tests: a draw that lands on a place taken).
func (r *Rooms) SetDraw(draw func() (int64, error)) { r.draw = draw }

// clock is the scripts' clock argument: "" for Redis' clock.
func (r *Rooms) clock() string {
	if r.now == nil {
		return ""
	}
	return strconv.FormatInt(r.now().UnixMilli(), 10)
}

// keys are the keys of a sale's line by the names the scripts read them by
// (scripts.go); each script takes those it names.
func keys(activityID int64) map[string]string {
	return map[string]string{"sale": stock.SaleKey(stock.One(activityID)), "meta": metaKey(activityID),
		"wait": waitKey(activityID), "tickets": ticketsKey(activityID), "passes": passesKey(activityID),
		"users": stock.UsersKey(stock.One(activityID)), "joined": joinedKey(activityID), "waits": waitsKey(activityID),
		"codes": stock.CodesKey(stock.One(activityID)), "claims": stock.CodeClaimsKey(stock.One(activityID))}
}

// challengeTTL is how long a challenge may be solved and sent.
const challengeTTL = 10 * time.Minute

// Challenge returns a proof-of-work challenge for joining a sale's line, at the cost
// the sale sets, accepted for challengeTTL by Redis' clock. Errors: ErrNoSale,
// ErrNoWaitingRoom.
func (r *Rooms) Challenge(ctx context.Context, activityID int64) (altcha.Challenge, error) {
	res, err := challengeScript.run(ctx, r.rdb, keys(activityID), map[string]any{"clock": r.clock()})
	if err != nil {
		return altcha.Challenge{}, fmt.Errorf("read waiting room: %w", err)
	}
	_, v, err := decode(res, replyChallenge)
	if err != nil {
		return altcha.Challenge{}, err
	}
	cost, now := v[0], v[1]
	return r.pow.Create(max(cost, 1), time.UnixMilli(now).Add(challengeTTL),
		url.Values{"sale": {strconv.FormatInt(activityID, 10)}})
}

// Join gives the buyer a place in the sale's line, or returns the place it has (created
// false). solution is the ALTCHA payload, "" for none; a sale with the challenge on
// needs one for a first join, and accepts each solution once. code is the access code
// the buyer presents, "" for none: before the start it puts the buyer before every
// buyer without one (join.lua), and in the early window only a buyer with one joins.
// Errors: ErrNoSale, ErrNoWaitingRoom, ErrNotOpen, ErrChallengeRequired,
// ErrChallengeFailed, stock.ErrEnded, stock.ErrSoldOut, stock.ErrNotStarted,
// stock.ErrCodeInvalid, stock.ErrCodeTaken.
func (r *Rooms) Join(ctx context.Context, activityID int64, who buyer.ID, solution, code string) (t Ticket, created bool, err error) {
	k := keys(activityID)
	k["pow"] = k["meta"] // any key of the slot when no solution came
	presented, expires := "", int64(0)
	var invalid error // why the solution that came is not accepted
	if solution != "" {
		// Its expiry is judged by the script, on Redis' clock: every instance accepts a
		// solution until the same instant, and remembers it that long.
		s, err := r.pow.Check(solution)
		if err == nil && s.Params.Get("sale") != strconv.FormatInt(activityID, 10) {
			err = errors.New("the challenge is another sale's")
		}
		if err != nil {
			invalid, presented = err, "0"
		} else {
			k["pow"] = powKey(activityID, s.Challenge)
			presented, expires = "1", s.Expires.UnixMilli()
		}
	}
	reply, v, err := r.join(ctx, k, map[string]any{"clock": r.clock(), "user": who.Key(), "lottery": lotteryBand,
		"arrival": arrivalBand, "early": earlyBand, "members": memberBand, "code": code, "solution": presented,
		"expires": expires})
	if errors.Is(err, ErrChallengeRequired) && invalid != nil { // judged after the sale's state: a ticket, a closed line
		return Ticket{}, false, fmt.Errorf("%w: %w", ErrChallengeFailed, invalid)
	}
	if err != nil {
		return Ticket{}, false, err
	}
	t, err = r.ticket(activityID, who, v)
	return t, reply == replyJoined, err
}

// maxDraws bounds the lottery's draws of one join: a draw lands on a place taken about
// once in a billion joins of a line of a million.
const maxDraws = 5

// join runs the join script with args and a lottery draw, drawing again while the draw
// lands on a place taken, and decodes its reply.
func (r *Rooms) join(ctx context.Context, k map[string]string, args map[string]any) (int64, []int64, error) {
	for range maxDraws {
		draw, err := r.draw()
		if err != nil {
			return 0, nil, err
		}
		args["draw"] = draw
		res, err := joinScript.run(ctx, r.rdb, k, args)
		if err != nil {
			return 0, nil, fmt.Errorf("join line: %w", err)
		}
		if code, v, err := decode(res, replyJoined, replyTicket); !errors.Is(err, errPlaceTaken) {
			return code, v, err
		}
	}
	return 0, nil, fmt.Errorf("join line: %d draws in a row landed on places taken", maxDraws)
}

// Ticket returns the buyer's ticket in the sale's line. Errors: ErrNoSale, ErrNoTicket.
func (r *Rooms) Ticket(ctx context.Context, activityID int64, who buyer.ID) (Ticket, error) {
	res, err := readScript.run(ctx, r.rdb, keys(activityID), map[string]any{"clock": r.clock(), "user": who.Key()})
	if err != nil {
		return Ticket{}, fmt.Errorf("read ticket: %w", err)
	}
	_, v, err := decode(res, replyTicket)
	if err != nil {
		return Ticket{}, err
	}
	return r.ticket(activityID, who, v)
}

// ticket turns the values of a ticket's answer (ticketValues) into a Ticket.
func (r *Rooms) ticket(activityID int64, who buyer.ID, v []int64) (Ticket, error) {
	status, position, ahead, admittedMs, expiresMs, place := v[0], v[1], v[2], v[3], v[4], v[5]
	avail, startMs, rate, nowMs := v[6], v[7], v[8], v[9]
	if place >= earlyBand && place < lotteryBand { // a code holder's: admitted from the early window's opening
		startMs = v[10]
	}
	if status < 0 || status >= int64(len(ticketStatuses)) {
		return Ticket{}, fmt.Errorf("%w: ticket status %d", errUnexpectedReply, status)
	}
	t := Ticket{ActivityID: activityID, Named: who.Named(), Status: ticketStatuses[status].status, Position: position,
		Ahead: ahead, Place: place, UnitsLeft: max(avail, 0)}
	if t.Status == Waiting {
		wait := float64(ahead) * admissionInterval(rate).Seconds()
		if nowMs < startMs {
			wait += float64(startMs-nowMs) / 1000
		}
		t.EstimatedWaitSeconds = int64(math.Ceil(wait))
	}
	if admittedMs > 0 {
		at, exp := apitime.Of(time.UnixMilli(admittedMs)), apitime.Of(time.UnixMilli(expiresMs))
		t.AdmittedAt, t.PassExpiresAt = &at, &exp
		if t.Status == Admitted {
			pass, err := r.passes.Sign(who, activityID, exp.Time)
			if err != nil {
				return Ticket{}, err
			}
			t.Pass = pass
		}
	}
	return t, nil
}

// Tolerance is how late an admission may come after its slot (admitScript): the
// period of the job that advances the lines, with room for its runs to come late.
const Tolerance = 250 * time.Millisecond

// admissionInterval is the time between two admissions at rate per second, as the
// admit script spaces them (0 for no rate).
func admissionInterval(rate int64) time.Duration {
	if rate < 1 {
		return 0
	}
	return time.Duration(float64(10*time.Second+Tolerance) / float64(10*rate-1))
}

// Step is what one advance of a line did and left.
type Step struct {
	Admitted    int64 // admitted by this step
	Waiting     int64 // waiting after it
	Outstanding int64 // passes neither expired nor used
	Used        int64 // passes whose holder bought, ever
}

// maxPerStep bounds the admissions of one step (one script run).
const maxPerStep = 20_000

// Admit advances the sale's line once: expired passes leave, and the buyers whose
// admission slots have come are admitted (see admitScript). Call it often (the worker
// does, every 100 ms, on one replica at a time); any caller, any number of them, keeps
// the rate. Errors: ErrNoSale.
func (r *Rooms) Admit(ctx context.Context, activityID int64) (Step, error) {
	res, err := admitScript.run(ctx, r.rdb, keys(activityID),
		map[string]any{"clock": r.clock(), "tolerance": Tolerance.Milliseconds(), "most": maxPerStep, "lottery": lotteryBand})
	if err != nil {
		return Step{}, fmt.Errorf("advance line: %w", err)
	}
	_, v, err := decode(res, replyAdvanced)
	if err != nil {
		return Step{}, err
	}
	return Step{Admitted: v[0], Waiting: v[1], Outstanding: v[2], Used: v[3]}, nil
}

// Figures are a line's counts for the admin.
type Figures struct {
	Joined      int64 `json:"joined"`
	Waiting     int64 `json:"waiting"`
	Admitted    int64 `json:"admitted"`
	Outstanding int64 `json:"passes_outstanding"`
	Used        int64 `json:"passes_used"`
	Expired     int64 `json:"passes_expired"`
}

// Figures reads a sale's line counts in one round trip.
func (r *Rooms) Figures(ctx context.Context, activityID int64) (Figures, error) {
	var meta *redis.SliceCmd
	var waiting, passes *redis.IntCmd
	var used *redis.StringCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HMGet(ctx, metaKey(activityID), "joined", "admitted", "expired", "usedexp")
		waiting = p.ZCard(ctx, waitKey(activityID))
		passes = p.ZCard(ctx, passesKey(activityID))
		used = stock.PassesUsed(ctx, p, activityID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Figures{}, fmt.Errorf("read line figures: %w", err)
	}
	n := make([]int64, 4)
	for i, v := range meta.Val() {
		n[i], _ = strconv.ParseInt(fmt.Sprint(v), 10, 64)
	}
	f := Figures{Joined: n[0], Waiting: waiting.Val(), Admitted: n[1], Expired: n[2]}
	f.Used, _ = strconv.ParseInt(used.Val(), 10, 64)
	f.Outstanding = passes.Val() - min(passes.Val(), max(0, f.Used-n[3]))
	return f, nil
}
