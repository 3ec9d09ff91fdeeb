package lambdatest

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// SQSEvent reads the SQS batch sample at path, relative to the repository's
// events/ folder (say "bulk-worker/bulk-operation.json"), as a worker of
// queueName receives it. It fails the test on a field Lambda does not send,
// a record not from SQS or not from a queue whose name ends in queueName
// (the stack prefixes names), a body whose MD5 is not md5OfBody, or a
// missing ApproximateReceiveCount.
func SQSEvent(t testing.TB, path, queueName string) events.SQSEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ev events.SQSEvent
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(ev.Records) == 0 {
		t.Fatalf("%s: no records", path)
	}
	for i, r := range ev.Records {
		sum := md5.Sum([]byte(r.Body))
		if r.EventSource != "aws:sqs" || !strings.HasPrefix(r.EventSourceARN, "arn:aws:sqs:"+r.AWSRegion+":") ||
			!strings.HasSuffix(r.EventSourceARN, "-"+queueName) || r.MessageId == "" || r.ReceiptHandle == "" {
			t.Errorf("%s: record %d is not a message of the %s queue: %+v", path, i, queueName, r)
		}
		if r.Md5OfBody != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: record %d: md5OfBody %s does not match its body", path, i, r.Md5OfBody)
		}
		if r.Attributes["ApproximateReceiveCount"] == "" {
			t.Errorf("%s: record %d has no ApproximateReceiveCount", path, i)
		}
	}
	return ev
}
