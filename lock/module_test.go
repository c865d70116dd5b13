package lock_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The package stands alone: none of its code (its tests aside) imports another package
// of this module, and a program in another module that requires this one builds with
// it and takes a lock on a real Redis.
func TestAnotherModuleUsesIt(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	deps, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, deps)
	}
	for _, d := range strings.Fields(string(deps)) {
		if strings.HasPrefix(d, "seckill/") && d != "seckill/lock" {
			t.Errorf("seckill/lock imports %s", d)
		}
	}

	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	redisVersion, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/redis/go-redis/v9").Output()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/shop\n\ngo 1.26\n\nrequire (\n\tseckill v0.0.0\n\tgithub.com/redis/go-redis/v9 " +
			strings.TrimSpace(string(redisVersion)) + "\n)\n\nreplace seckill => " + root + "\n",
		"go.sum": string(sum),
		"main.go": `package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
)

func main() {
	ctx := context.Background()
	locks := lock.New(redis.NewClient(&redis.Options{Addr: os.Args[1]}))
	defer locks.Close()
	l, err := locks.Obtain(ctx, "shop:{order:1}", time.Second, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("obtained, fence", l.Fence(), "released:", l.Release(ctx) == nil)
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := exec.Command("go", "run", ".", redisAddr)
	run.Dir = dir
	// Offline, from the module cache this module's build filled: nothing is fetched.
	run.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the other module's program: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "obtained, fence ") || !strings.HasSuffix(got, "released: true") {
		t.Errorf("the other module's program printed %q", got)
	}
}
