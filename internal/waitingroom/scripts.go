package waitingroom

//go:generate go test -run ^TestScriptFiles$ -args -update

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/internal/stock"
)

// The line's scripts answer with a code, then the values the code says. lineReplies
// names each code for the scripts (their Lua constants are written from it, repliesLua)
// and gives a refusal's error; decode turns a reply into its values or that error.
const (
	replyJoined            = 0   // a new ticket: the ticket's answer (ticketValues)
	replyTicket            = 1   // the user's ticket: the ticket's answer
	replyChallenge         = 2   // the challenge's cost, and now (unix ms)
	replyAdvanced          = 3   // admitted now, waiting, passes outstanding and unused, passes used
	replyStatus            = 4   // the line's public status (statusValues)
	replyNoSale            = -1  // no such sale
	replyNoRoom            = -2  // the sale has no waiting room
	replyEnded             = -3  // the sale has ended
	replySoldOut           = -4  // no unit left
	replyNotOpen           = -5  // before the line opens (the prequeue before the start)
	replyChallengeRequired = -6  // the challenge is on and no solution came, or one that is not valid
	replySolutionUsed      = -7  // the solution joined the line before
	replyNoTicket          = -8  // the user never joined
	replyChallengeExpired  = -9  // the solution's challenge has expired
	replyPlaceTaken        = -10 // the lottery's draw is another ticket's place: draw again
	replyNotStarted        = -11 // the early window, and no access code came: only code holders join in it
	replyCodeInvalid       = -12 // the access code is not the sale's, or revoked
	replyCodeTaken         = -13 // the access code is another buyer's
)

// ticketValues is how many values follow the code of a ticket's answer: status,
// position, ahead, admitted (unix ms), pass expiry (unix ms), place, units left, the
// sale's start (unix ms), its admissions a second, now (unix ms), the opening of its
// early window (unix ms).
const ticketValues = 11

// statusValues is how many values follow the code of a status: the state (lineStates'
// index), admitted through (the highest place admitted), joined, admitted, admissions a
// second, units left, now (unix ms).
const statusValues = 7

// lineReply is one of the scripts' reply codes: its Lua constant's name, how many values
// follow the code, and for a refusal its error (nil: an answer made of the values).
type lineReply struct {
	code   int64
	lua    string
	values int
	err    error
}

// Errors of the refusals that say more than their sentinel.
var (
	errSolutionUsed     = fmt.Errorf("%w: this solution joined the line before", ErrChallengeFailed)
	errChallengeExpired = fmt.Errorf("%w: the challenge has expired", ErrChallengeFailed)
	errUnexpectedReply  = errors.New("unexpected script reply")
	errPlaceTaken       = errors.New("the lottery's draw is another ticket's place")
)

// lineReplies are all the reply codes of the line's scripts.
var lineReplies = []lineReply{
	{replyJoined, "JOINED", ticketValues, nil},
	{replyTicket, "TICKET", ticketValues, nil},
	{replyChallenge, "CHALLENGE", 2, nil},
	{replyAdvanced, "ADVANCED", 4, nil},
	{replyStatus, "STATUS", statusValues, nil},
	{replyNoSale, "NO_SALE", 0, ErrNoSale},
	{replyNoRoom, "NO_ROOM", 0, ErrNoWaitingRoom},
	{replyEnded, "ENDED", 0, stock.ErrEnded},
	{replySoldOut, "SOLD_OUT", 0, stock.ErrSoldOut},
	{replyNotOpen, "NOT_OPEN", 0, ErrNotOpen},
	{replyChallengeRequired, "CHALLENGE_REQUIRED", 0, ErrChallengeRequired},
	{replySolutionUsed, "SOLUTION_USED", 0, errSolutionUsed},
	{replyNoTicket, "NO_TICKET", 0, ErrNoTicket},
	{replyChallengeExpired, "CHALLENGE_EXPIRED", 0, errChallengeExpired},
	{replyPlaceTaken, "PLACE_TAKEN", 0, errPlaceTaken},
	{replyNotStarted, "NOT_STARTED", 0, stock.ErrNotStarted},
	{replyCodeInvalid, "CODE_INVALID", 0, stock.ErrCodeInvalid},
	{replyCodeTaken, "CODE_TAKEN", 0, stock.ErrCodeTaken},
}

// ticketStatuses are a ticket's statuses as the scripts number them (the index) and
// name them in Lua.
var ticketStatuses = []struct{ status, lua string }{
	{Waiting, "TICKET_WAITING"},
	{Admitted, "TICKET_ADMITTED"},
	{Expired, "TICKET_EXPIRED"},  // admitted, the pass unused past its expiry
	{SoldOut, "TICKET_SOLD_OUT"}, // waiting in a line that closed: no unit left, or the sale ended
}

// lineStates are a line's public states as the status script numbers them (the
// index) and names them in Lua.
var lineStates = []struct{ state, lua string }{
	{StateBefore, "LINE_BEFORE"},
	{StateAdmitting, "LINE_ADMITTING"},
	{StateSoldOut, "LINE_SOLD_OUT"},
	{StateEnded, "LINE_ENDED"},
}

// repliesLua defines the reply codes, the ticket statuses and the line's states as Lua
// constants: every script's section "codes".
func repliesLua() string {
	var names, values []string
	for _, r := range lineReplies {
		names, values = append(names, r.lua), append(values, strconv.FormatInt(r.code, 10))
	}
	for i, s := range ticketStatuses {
		names, values = append(names, s.lua), append(values, strconv.Itoa(i))
	}
	for i, s := range lineStates {
		names, values = append(names, s.lua), append(values, strconv.Itoa(i))
	}
	return "local " + strings.Join(names, ", ") + " = " + strings.Join(values, ", ") + "\n"
}

// decode turns a script's reply into the values after its code, when the code is one of
// want; a refusal's code into its error; anything else (an unknown code, another code, a
// count of values not the code's) into an error that is none of the line's.
func decode(res []int64, want ...int64) (code int64, values []int64, err error) {
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("%w: none", errUnexpectedReply)
	}
	i := slices.IndexFunc(lineReplies, func(r lineReply) bool { return r.code == res[0] })
	if i < 0 || len(res)-1 != lineReplies[i].values || lineReplies[i].err == nil && !slices.Contains(want, res[0]) {
		return 0, nil, fmt.Errorf("%w %v", errUnexpectedReply, res)
	}
	if lineReplies[i].err != nil {
		return res[0], nil, lineReplies[i].err
	}
	return res[0], res[1:], nil
}

// lineScript is one of the line's scripts, a .lua file beside this one, with its KEYS
// and ARGV named, once, here: its section "head" (headLua, written by go generate)
// unpacks them as K.<name> and ARG.<name>, and its body never reads KEYS or ARGV by
// position. The parts before that section see neither: they take what they read as
// arguments.
type lineScript struct {
	keys, args []string
	src        string
	script     *redis.Script
}

func newScript(src string, keys, args []string) *lineScript {
	return &lineScript{keys: keys, args: args, src: src, script: redis.NewScript(src)}
}

// headLua unpacks a script's keys and arguments by name: its section "head".
func headLua(keys, args []string) string {
	return fmt.Sprintf("local K = {%s}\nlocal ARG = {%s}\n", named(keys, "KEYS"), named(args, "ARGV"))
}

// named is the fields of a Lua table of names, each the element of list at its place.
func named(names []string, list string) string {
	fields := make([]string, len(names))
	for i, n := range names {
		fields[i] = fmt.Sprintf("%s = %s[%d]", n, list, i+1)
	}
	return strings.Join(fields, ", ")
}

// run runs the script with its keys, found by name in keys (which may hold more: a
// sale's line keys), and its arguments, all of them and no other, by name in args.
func (s *lineScript) run(ctx context.Context, rdb redis.Scripter, keys map[string]string, args map[string]any) ([]int64, error) {
	if len(args) != len(s.args) {
		return nil, fmt.Errorf("line script: arguments %v, want %v", mapKeys(args), s.args)
	}
	k, a := make([]string, len(s.keys)), make([]any, len(s.args))
	for i, name := range s.keys {
		v, ok := keys[name]
		if !ok {
			return nil, fmt.Errorf("line script: no key %q among %v", name, mapKeys(keys))
		}
		k[i] = v
	}
	for i, name := range s.args {
		v, ok := args[name]
		if !ok {
			return nil, fmt.Errorf("line script: no argument %q among %v", name, mapKeys(args))
		}
		a[i] = v
	}
	return s.script.Run(ctx, rdb, k, a...).Int64Slice()
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The keys and arguments of the scripts, by the names the scripts read them by:
//
//	sale     the sale's hash (stock.SaleKey)
//	meta     the line's counters (metaKey)
//	wait     the waiting buyers (waitKey)
//	tickets  the admitted buyers' tickets (ticketsKey)
//	passes   the passes outstanding (passesKey)
//	users    the sale's users hash (stock.UsersKey)
//	pow      the solution's proof-of-work key (powKey; any key of the slot when none)
//	codes    the sale's access codes, and claims the uses not yet recorded
//	         (stock.CodesKey, stock.CodeClaimsKey)
//	joined   when each waiting buyer whose wait counts from its join joined (joinedKey)
//	waits    the admitted buyers' waits (waitsKey)
//
//	clock     "" for Redis' clock, or unix ms (tests)
//	user      the buyer's key (buyer.ID.Key)
//	draw      the lottery's draw for this buyer, an integer in [0, bandWidth)
//	lottery   the first place of the band of a join before the start (places.go); the
//	          line admits no place from it on before the start
//	arrival   the first place of the band of a join from the start on, less one
//	early     the first place of the band of a code holder's join before the early window
//	members   the first place of the band of a code holder's join in it, less one
//	code      the access code the buyer presents, "" for none
//	solution  "1" a right solution of ours came with the join, "0" one that is not
//	          (refused even where no challenge is needed), "" none
//	expires   the solution's challenge's expiry (unix ms), judged by the clock
//	tolerance how late an admission may come after its slot (ms)
//	most      the most admissions of one run
var (
	ticketKeyNames = []string{"sale", "meta", "wait", "tickets", "users"}
	admitKeyNames  = []string{"sale", "meta", "wait", "tickets", "passes", "users", "joined", "waits"}
)

// challengeScript reads what a sale's challenge needs (challenge.lua).
//
//go:embed challenge.lua
var challengeLua string
var challengeScript = newScript(challengeLua, []string{"sale"}, []string{"clock"})

// joinScript gives a user a place in a sale's line, once (join.lua).
//
//go:embed join.lua
var joinLua string
var joinScript = newScript(joinLua, append(slices.Clone(ticketKeyNames), "pow", "joined", "codes", "claims"),
	[]string{"clock", "user", "draw", "lottery", "arrival", "early", "members", "code", "solution", "expires"})

// readScript reads a user's ticket (read.lua).
//
//go:embed read.lua
var readLua string
var readScript = newScript(readLua, ticketKeyNames, []string{"clock", "user"})

// admitScript advances a sale's line: it retires expired passes, then admits the next
// waiting buyers whose slots have come (admit.lua).
//
//go:embed admit.lua
var admitLua string
var admitScript = newScript(admitLua, admitKeyNames, []string{"clock", "tolerance", "most", "lottery"})

// statusScript reads a line's public status: what every waiting buyer reads, the same
// for all of them (status.lua).
//
//go:embed status.lua
var statusLua string
var statusScript = newScript(statusLua, []string{"sale", "meta"}, []string{"clock"})
