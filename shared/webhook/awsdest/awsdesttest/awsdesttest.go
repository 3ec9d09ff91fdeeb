// Package awsdesttest holds the recorded EventBridge client of the tests
// of AWS destinations: no emulator of EventBridge runs here, so its
// deliveries are proven against this fake of awsdest.EventBridgeAPI.
package awsdesttest

import (
	"context"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// EventBridge records every PutEvents with the options its call ended
// with (from a base in us-east-1), and takes every entry unless Fail is
// set: then it answers each entry with Fail and FailedEntryCount 1, as
// the bus does for an entry it refused.
type EventBridge struct {
	mu   sync.Mutex
	in   []*eventbridge.PutEventsInput
	opts []eventbridge.Options
	fail *types.PutEventsResultEntry
}

// PutEvents records the call.
func (f *EventBridge) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	o := eventbridge.Options{Region: "us-east-1"}
	for _, fn := range optFns {
		fn(&o)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in, f.opts = append(f.in, in), append(f.opts, o)
	if f.fail != nil {
		return &eventbridge.PutEventsOutput{FailedEntryCount: 1, Entries: []types.PutEventsResultEntry{*f.fail}}, nil
	}
	return &eventbridge.PutEventsOutput{Entries: []types.PutEventsResultEntry{{EventId: aws.String("eb-" + strconv.Itoa(len(f.in)))}}}, nil
}

// Fail has every later entry refused with code and message; "" takes
// them again.
func (f *EventBridge) Fail(code, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code == "" {
		f.fail = nil
		return
	}
	f.fail = &types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String(message)}
}

// Calls returns the calls so far: their inputs and options.
func (f *EventBridge) Calls() ([]*eventbridge.PutEventsInput, []eventbridge.Options) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*eventbridge.PutEventsInput(nil), f.in...), append([]eventbridge.Options(nil), f.opts...)
}
