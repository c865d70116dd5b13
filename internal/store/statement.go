package store

import (
	"strconv"
	"time"

	"gorm.io/gorm"
)

// rowsStatement builds a statement of many rows, the worker's batch inserts
// (insertOrders, changeUserPurchases), in one buffer sized for it. A value that reads the
// same on every connection is written into the text: an integer, a boolean, NULL, and a
// plain string (no quote, backslash or control character, whose escaping would depend on
// the connection's sql_mode). Any other value is left to the driver as an argument
// ('?'), as a time is, which the driver writes in the connection's time zone. Written
// into the text, a value costs no interface{} to carry it and no conversion by
// database/sql, and a statement with no argument left no second pass of the driver over
// its text.
type rowsStatement struct {
	text     []byte
	args     []any
	rows     int
	rowStart bool // the next value is its row's first
}

// newRowsStatement starts a statement with head, for about size bytes of text and
// args arguments in all.
func newRowsStatement(head string, size, args int) *rowsStatement {
	s := &rowsStatement{text: make([]byte, 0, size), args: make([]any, 0, args)}
	s.text = append(s.text, head...)
	return s
}

// row begins a row: its values follow, then endRow.
func (s *rowsStatement) row() {
	if s.rows > 0 {
		s.text = append(s.text, ", "...)
	}
	s.rows++
	s.text = append(s.text, '(')
	s.rowStart = true
}

// endRow ends a row.
func (s *rowsStatement) endRow() { s.text = append(s.text, ')') }

// sep writes the separator before a value.
func (s *rowsStatement) sep() {
	if !s.rowStart {
		s.text = append(s.text, ", "...)
	}
	s.rowStart = false
}

func (s *rowsStatement) int(n int64) {
	s.sep()
	s.text = strconv.AppendInt(s.text, n, 10)
}

func (s *rowsStatement) bool(b bool) {
	s.sep()
	s.text = append(s.text, "01"[btoi(b)])
}

func (s *rowsStatement) null() {
	s.sep()
	s.text = append(s.text, "NULL"...)
}

func (s *rowsStatement) str(v string) {
	if !plain(v) {
		s.arg(v)
		return
	}
	s.sep()
	s.text = append(s.text, '\'')
	s.text = append(s.text, v...)
	s.text = append(s.text, '\'')
}

// arg leaves v to the driver.
func (s *rowsStatement) arg(v any) {
	s.sep()
	s.text = append(s.text, '?')
	s.args = append(s.args, v)
}

func (s *rowsStatement) time(t time.Time) { s.arg(t) }

func (s *rowsStatement) strOrNull(p *string) {
	if p == nil {
		s.null()
		return
	}
	s.str(*p)
}

func (s *rowsStatement) intOrNull(p *int) {
	if p == nil {
		s.null()
		return
	}
	s.int(int64(*p))
}

func (s *rowsStatement) timeOrNull(p *time.Time) {
	if p == nil {
		s.null()
		return
	}
	s.time(*p)
}

// write writes text as it is.
func (s *rowsStatement) write(text string) { s.text = append(s.text, text...) }

// exec runs the statement in tx (execBuilt).
func (s *rowsStatement) exec(tx *gorm.DB) *gorm.DB { return execBuilt(tx, string(s.text), s.args) }

// plain tells a string that reads the same between quotes in every sql_mode: no quote,
// backslash or control character.
func plain(v string) bool {
	for i := range len(v) {
		if c := v[i]; c < ' ' || c == '\'' || c == '\\' || c == 0x7f {
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
