package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// redisCall is a command a Lua script runs: redis.call('HGET', ...) or
// redis.pcall("ZADD", ...).
var redisCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z|]+)['"]`)

// TestRedisACLAllowsEveryScriptCommand reads every .lua file of the repository and
// checks that RedisACL lets the service's user run each command in it: Redis checks a
// script's commands against the user that runs it, and a command the rule leaves out
// fails the script (NOPERM) only on a locked-down Redis.
func TestRedisACLAllowsEveryScriptCommand(t *testing.T) {
	allowed := map[string]bool{}
	for _, word := range strings.Fields(RedisACLRule()) {
		if cmd, ok := strings.CutPrefix(word, "+"); ok {
			allowed[cmd] = true
		}
	}
	root := filepath.Join("..", "..")
	scripts := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".data" || d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".lua" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scripts++
		for _, m := range redisCall.FindAllStringSubmatch(string(src), -1) {
			if cmd := strings.ToLower(m[1]); !allowed[cmd] {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s runs %s, which RedisACL does not allow (+%s)", rel, m[1], cmd)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scripts < 20 {
		t.Fatalf("read %d .lua files, want the service's scripts (at least 20)", scripts)
	}
}
