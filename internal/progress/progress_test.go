package progress

import "testing"

func TestCountersAreListedUntilTheyEnd(t *testing.T) {
	a := Start("compile", 10)
	b := Start("run", 3)
	b.Step(2, "task matmul_0")
	s := Snapshot()
	if len(s) != 2 || s[0].Kind != "compile" || s[1].Kind != "run" {
		t.Fatalf("snapshot %+v, want compile then run", s)
	}
	if s[1].Done != 2 || s[1].Total != 3 || s[1].Step != "task matmul_0" {
		t.Fatalf("run state %+v", s[1])
	}
	a.End()
	b.End()
	if s := Snapshot(); len(s) != 0 {
		t.Fatalf("after End: %+v", s)
	}
}
