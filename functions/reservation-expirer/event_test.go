package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestScheduledSampleEvent keeps events/reservation-expirer/scheduled.json a
// valid EventBridge scheduled event, as the function's rule delivers it. The
// handler ignores the payload: each run expires whatever is due.
func TestScheduledSampleEvent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "reservation-expirer", "scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var ev events.EventBridgeEvent
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("scheduled.json: %v", err)
	}
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Time.IsZero() || len(ev.Resources) != 1 ||
		!strings.HasPrefix(ev.Resources[0], "arn:aws:events:"+ev.Region+":"+ev.AccountID+":rule/") {
		t.Errorf("scheduled.json: %+v, want a Scheduled Event from aws.events, with a time and the rule that sent it", ev)
	}
	if strings.TrimSpace(string(ev.Detail)) != "{}" {
		t.Errorf("detail = %s, want {} as a schedule sends", ev.Detail)
	}
}
