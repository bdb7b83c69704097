package interrupt

import "testing"

func TestRaiseStopsTheRunsThatStartedBefore(t *testing.T) {
	before := Current()
	if Requested(before) || Requested(nil) {
		t.Fatal("requested before any Raise")
	}
	Raise()
	if !Requested(before) {
		t.Fatal("a run that started before Raise is not stopped")
	}
	if Requested(Current()) {
		t.Fatal("a run that starts after Raise is stopped")
	}
}
