package waitingroom

import (
	"crypto/rand"
	"encoding/binary"
)

// A ticket's place is a positive integer below 2^53 (exact in a Lua number, a Redis
// score and a JavaScript number), distinct within its sale and fixed at the join: the
// line admits in place order, and a ticket is admitted once the line's admitted through
// (the highest place admitted) reaches it. The places are cut into bands of bandWidth,
// each for one kind of join, so that a kind that must go first only needs a lower band:
//
//	band 1  [1e15, 2e15)  early access: code holders who join before the early window opens, at random
//	band 2  [2e15, 3e15)  early access: code holders who join in the early window, in join order
//	band 3  [3e15, 4e15)  everyone else who joins before the start, at random (the lottery)
//	band 4  [4e15, 5e15)  joins from the start on, in join order
//
// A random band's places are drawn uniformly (lotteryDraw) and redrawn on the rare
// collision; a join order band's are its first place plus the count of its joins so far.
// A band is never given out while the line admits places of it or above (a lottery band
// fills before admission reaches it, an arrival band only grows past every place
// admitted), so no waiting ticket is ever below admitted through. The line admits
// bands 1 and 2 from the early window's opening, and the others from the start: before
// the start no place of band 3 or above is admitted.
const (
	bandWidth   = 1_000_000_000_000_000
	earlyBand   = 1 * bandWidth
	memberBand  = 2 * bandWidth
	lotteryBand = 3 * bandWidth
	arrivalBand = 4 * bandWidth
)

// drawBits is how many random bits a draw takes: the fewest that cover bandWidth.
const drawBits = 50

// lotteryDraw returns a uniform draw in [0, bandWidth): 50 random bits, drawn again
// when they land past bandWidth (about one time in nine).
func lotteryDraw() (int64, error) {
	for {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if v := int64(binary.BigEndian.Uint64(b[:]) >> (64 - drawBits)); v < bandWidth {
			return v, nil
		}
	}
}
