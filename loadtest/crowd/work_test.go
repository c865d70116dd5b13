package main

import (
	"strings"
	"testing"
)

// The work per order leaves out this tool's own reads (its connection's counters) and
// tells the scripts' time, which includes their commands', apart from the commands.
func TestPrintWorkLeavesOutTheToolsReads(t *testing.T) {
	sample := func(global, own, evalsha, hset int64) workSample {
		return workSample{
			mysql: map[string]int64{"Rows_read": global, "Handler_write": 2 * global, "Questions": global, "Innodb_data_fsyncs": global},
			// A connection's SHOW SESSION STATUS shows a server-wide counter's global figure.
			own:   map[string]int64{"Rows_read": own, "Handler_write": 0, "Questions": own, "Innodb_data_fsyncs": global},
			calls: map[string]int64{"evalsha": evalsha, "hset": hset},
			usec:  map[string]int64{"evalsha": 10 * evalsha, "hset": hset},
		}
	}
	var out strings.Builder
	printWork(&out, 100, sample(1000, 400, 5, 20), sample(1300, 650, 15, 220))
	for _, want := range []string{
		"mysql per order: rows read 0.50, written 6.00,", // (300 - 250) / 100 rows read; 600 / 100 written
		"statements 0.50", // (300 - 250) / 100
		"fsyncs 3.00",     // (1300 - 1000) / 100: the server's, nothing taken out
		"redis per order: 0.10 script calls, 1.00 µs in them", // evalsha alone
		"commands, in scripts or not: hset 2.00 (2.00 µs)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printWork wrote\n%s\nwant it to contain %q", out.String(), want)
		}
	}
}
