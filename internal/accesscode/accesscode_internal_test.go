package accesscode

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// A generated code holds at least 60 random bits, of characters none of which is read
// for another, each character drawn uniformly.
func TestGenerate(t *testing.T) {
	if bits := generatedLength * math.Log2(float64(len(alphabet))); bits < 60 {
		t.Fatalf("a code holds %.1f random bits, want at least 60", bits)
	}
	for _, lookalike := range "01OIL" {
		if strings.ContainsRune(alphabet, lookalike) {
			t.Errorf("the alphabet holds %q, a look-alike", lookalike)
		}
	}
	const n = 100_000
	codes, err := generate(n)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]bool, n)
	counts := map[rune]int{}
	for _, c := range codes {
		if len(c) != generatedLength || strings.Trim(c, alphabet) != "" {
			t.Fatalf("code %q: want %d characters of %s", c, generatedLength, alphabet)
		}
		if seen[c] {
			t.Fatalf("code %q made twice in %d", c, n)
		}
		seen[c] = true
		for _, r := range c {
			counts[r]++
		}
	}
	// Each character is drawn with chance 1/31: over 1.3 million draws a count is
	// 41,935 with a standard deviation of about 201. A bias of the first 8 characters
	// (a draw taken modulo 31 from a byte without the rejection) would make them
	// 44,080, over ten deviations off.
	want := float64(n*generatedLength) / float64(len(alphabet))
	for _, r := range alphabet {
		if d := math.Abs(float64(counts[r]) - want); d > 6*math.Sqrt(want) {
			t.Errorf("character %q drawn %d times, want about %.0f", r, counts[r], want)
		}
	}
}

func TestCheckCodes(t *testing.T) {
	for _, tc := range []struct {
		code               string
		presented, imports bool
	}{
		{"ABCD", true, true},
		{"abc", true, false}, // too short to import: presented, it is only unknown
		{strings.Repeat("x", 64), true, true},
		{strings.Repeat("x", 65), false, false},
		{"with space", true, true},
		{" lead", true, false}, // a header drops the space: never presented as it is
		{"trail ", true, false},
		{"tab\there", false, false},
		{"line\nbreak", false, false},
		{"del\x7f", false, false},
		{"c1\u0085code", false, false},
		{"é-accent", true, false}, // not ASCII: presented, unknown
		{"!#%&/?~", true, true},
		{"", true, false}, // presented: none
	} {
		err := CheckPresented(tc.code)
		if (err == nil) != tc.presented || err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("CheckPresented(%q) = %v, want accepted %v", tc.code, err, tc.presented)
		}
		if got := checkImported(tc.code); got != tc.imports {
			t.Errorf("checkImported(%q) = %v, want %v", tc.code, got, tc.imports)
		}
	}
}
