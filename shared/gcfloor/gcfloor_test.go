package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name        string
		floor, live uint64
		want        int
	}{
		{"live heap unknown counts as the runtime minimum", 256 * mib, 0, 6300},
		{"small live heap grows to the floor", 256 * mib, 16 * mib, 1500},
		{"live heap at half the floor collects as GOGC=100", 256 * mib, 128 * mib, 100},
		{"live heap past the floor collects as GOGC=100", 256 * mib, 1024 * mib, 100},
		{"a huge floor is bounded", 1 << 50, 4 * mib, maxPercent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Percent(c.floor, c.live); got != c.want {
				t.Fatalf("Percent(%d, %d) = %d, want %d", c.floor, c.live, got, c.want)
			}
		})
	}
}

// TestFloorFollowsEveryCycle checks the floor is applied at start and
// re-applied after collections, and that stop restores GOGC=100.
func TestFloorFollowsEveryCycle(t *testing.T) {
	t.Setenv("GOGC", "")
	// t.Setenv leaves the variable set (to ""); Start must see it unset.
	unsetGOGC(t)
	defer debug.SetGCPercent(100)
	stop := Start(512 << 20)
	if got := debug.SetGCPercent(-1); got <= 100 {
		t.Fatalf("GOGC after Start = %d, want above 100", got)
	}
	// Force the percent back to 100 and let a few cycles run: the tuner
	// must put the floor back after them.
	debug.SetGCPercent(100)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		p := debug.SetGCPercent(100)
		if p > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the floor was not re-applied after collections (GOGC %d)", p)
		}
	}
	stop()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC after stop = %d, want 100", got)
	}
}

func TestOperatorGOGCWins(t *testing.T) {
	t.Setenv("GOGC", "50")
	defer debug.SetGCPercent(100)
	debug.SetGCPercent(50)
	stop := Start(512 << 20)
	defer stop()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetGCPercent(50); got != 50 {
		t.Fatalf("GOGC = %d with GOGC=50 in the environment, want 50", got)
	}
}

func unsetGOGC(t *testing.T) {
	t.Helper()
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
}
