package config

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// A secret comes from its variable or from the file <NAME>_FILE names, never both; the
// file's one trailing newline is dropped; an empty variable counts as unset.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := strings.Repeat("k", 40)
	dsn := "shop:pa:ss@tcp(db.internal:3306)/seckill?parseTime=true"
	tests := []struct {
		name    string
		env     map[string]string
		secret  string // the JWT secret Load must return
		dsn     string // the DSN Load must return
		wantErr string // part of the error, "" for none
	}{
		{"from the variable", map[string]string{"SECKILL_JWT_SECRET": secret}, secret, defaultDSN, ""},
		{"from a file", map[string]string{"SECKILL_JWT_SECRET_FILE": file("jwt", secret)}, secret, defaultDSN, ""},
		{"one trailing newline dropped", map[string]string{"SECKILL_JWT_SECRET_FILE": file("jwt-nl", secret+"\n"),
			"SECKILL_MYSQL_DSN_FILE": file("dsn-crlf", dsn+"\r\n")}, secret, dsn, ""},
		{"only one newline dropped", map[string]string{"SECKILL_JWT_SECRET_FILE": file("jwt-nl2", secret+"\n\n")}, secret + "\n", defaultDSN, ""},
		{"an empty variable is unset", map[string]string{"SECKILL_JWT_SECRET": "", "SECKILL_JWT_SECRET_FILE": file("jwt2", secret),
			"SECKILL_MYSQL_DSN": ""}, secret, defaultDSN, ""},
		{"an empty _FILE is unset", map[string]string{"SECKILL_JWT_SECRET": secret, "SECKILL_JWT_SECRET_FILE": ""}, secret, defaultDSN, ""},
		{"both set", map[string]string{"SECKILL_JWT_SECRET": secret, "SECKILL_JWT_SECRET_FILE": file("jwt3", secret)},
			"", "", "SECKILL_JWT_SECRET and SECKILL_JWT_SECRET_FILE are both set"},
		{"a missing file", map[string]string{"SECKILL_JWT_SECRET": secret, "SECKILL_MYSQL_DSN_FILE": filepath.Join(dir, "none")},
			"", "", "SECKILL_MYSQL_DSN_FILE"},
		{"a directory", map[string]string{"SECKILL_JWT_SECRET_FILE": dir}, "", "", "SECKILL_JWT_SECRET_FILE"},
		{"an empty file", map[string]string{"SECKILL_JWT_SECRET_FILE": file("empty", "")}, "", "", "SECKILL_JWT_SECRET_FILE"},
		{"a file with a newline only", map[string]string{"SECKILL_JWT_SECRET_FILE": file("nl", "\n")}, "", "", "SECKILL_JWT_SECRET_FILE"},
		{"a short secret from a file", map[string]string{"SECKILL_JWT_SECRET_FILE": file("short", "short\n")}, "", "", "at least 32 bytes"},
	}
	var names []string
	for _, v := range Vars {
		if v.Secret {
			names = append(names, v.Name, v.Name+"_FILE")
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SECKILL_ENV", "")
			c, ok := load(t, tc.env, tc.wantErr, names...)
			if !ok {
				if _, err := Load(); strings.Contains(err.Error(), "\n") {
					t.Errorf("one bad setting, several errors:\n%v", err)
				}
				return
			}
			if c.JWTSecret != tc.secret || c.MySQLDSN != tc.dsn {
				t.Errorf("secret %q, DSN %q; want %q, %q", c.JWTSecret, c.MySQLDSN, tc.secret, tc.dsn)
			}
			if s := c.String(); strings.Contains(s, secret) || strings.Contains(s, "pa:ss") {
				t.Errorf("the start-up line shows a secret: %s", s)
			}
		})
	}
}

const defaultDSN = "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true"

// The start-up line names every variable Load reads, each one once, and shows a
// secret only as where it came from.
func TestStartupLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dsn")
	if err := os.WriteFile(path, []byte("app:hunter2-hunter2@tcp(db:3306)/shop\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := load(t, map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("j", 32), "SECKILL_MYSQL_DSN_FILE": path},
		"", "SECKILL_ENV", "SECKILL_JWT_SECRET", "SECKILL_MYSQL_DSN_FILE")
	line := c.String()
	for _, v := range Vars {
		if n := strings.Count(" "+line, " "+v.Name+"="); n != 1 && !v.Runtime {
			t.Errorf("%s appears %d times in %s", v.Name, n, line)
		}
	}
	for _, want := range []string{`SECKILL_JWT_SECRET=set (environment)`,
		`SECKILL_MYSQL_DSN="app:***@tcp(db:3306)/shop" (file ` + path + `)`, `SECKILL_RATE_USER="20"`} {
		if !strings.Contains(line, want) {
			t.Errorf("want %s in %s", want, line)
		}
	}
	if strings.Contains(line, "hunter2") || strings.Contains(line, "jjjj") {
		t.Errorf("a secret in %s", line)
	}
	t.Setenv("SECKILL_ENV", "dev")
	t.Setenv("SECKILL_JWT_SECRET", "")
	if c, _ = load(t, nil, ""); !strings.Contains(c.String(), "SECKILL_JWT_SECRET=dev default (public!)") {
		t.Errorf("dev mode's secret: %s", c.String())
	}
}

// The binaries' Go runtime defaults come from the table, and the environment wins.
func TestRuntimeDefaults(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	SetRuntimeDefaults(API)
	if gc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<62); gc != 400 || limit != 200<<20 {
		t.Errorf("api: GOGC %d, GOMEMLIMIT %d; want 400 and 200 MiB", gc, limit)
	}
	SetRuntimeDefaults(Worker)
	if gc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); gc != 400 || limit != 1<<62 {
		t.Errorf("worker: GOGC %d, GOMEMLIMIT %d; want 400 and no limit set", gc, limit)
	}
	t.Setenv("GOGC", "150")
	SetRuntimeDefaults(API)
	if gc := debug.SetGCPercent(100); gc != 100 {
		t.Errorf("GOGC=150 in the environment, yet the default was applied (%d)", gc)
	}
}
