package config_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"seckill/internal/config"
	"seckill/internal/testutil"
)

// At start a MySQL that refuses the connection's settings stops the process, naming the
// setting; one that does not answer, refused at the port or frozen, does not: CheckMySQL
// says it is not up, within seconds.
func TestCheckMySQL(t *testing.T) {
	maria := testutil.StartMariaDB(t)
	db := testutil.MySQLOn(t, maria.DSN)
	wrongPassword, err := mysql.ParseDSN(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	wrongPassword.Passwd = "not-the-password"
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := *wrongPassword
	nobody.Passwd, nobody.Addr = "seckill", closed.Addr().String()
	closed.Close()

	tests := []struct {
		name    string
		dsn     string
		freeze  bool
		wantUp  bool
		wantErr string // the setting the error names; "" for none
	}{
		{"MySQL answers", db.DSN, false, true, ""},
		{"a wrong password", wrongPassword.FormatDSN(), false, false, "SECKILL_MYSQL_DSN"},
		{"nothing listens", nobody.FormatDSN(), false, false, ""},
		{"MySQL frozen", db.DSN, true, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.freeze {
				maria.Pause()
				defer maria.Resume()
			}
			began := time.Now()
			up, err := config.Config{MySQLDSN: tc.dsn}.CheckMySQL(context.Background())
			took := time.Since(began)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one naming %s", err, tc.wantErr)
			case up != tc.wantUp:
				t.Errorf("up = %t, want %t", up, tc.wantUp)
			}
			if took > 5*time.Second { // it waits 2 s at most; the rest is margin for a loaded machine
				t.Errorf("answered after %v, want within seconds", took)
			}
		})
	}
}
