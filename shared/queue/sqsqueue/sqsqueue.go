// Package sqsqueue is the work-queue port over Amazon SQS (aws-sdk-go-v2):
// the stream router and the workers send with it, and the local binary on
// DynamoDB also receives with it, as the worker Lambdas' event source
// mappings do in AWS.
//
// Queues are named as in package queue ("webhook-deliveries", ...) and
// mapped to their URLs once, when the Queue is built: the stack passes each
// URL in the environment (config.QueueURLEnv()), so sending costs exactly one
// SendMessage (or one SendMessageBatch for up to ten messages, SendEach)
// and no GetQueueUrl, and the functions need no permission to
// look queues up. Resolve does the look-up by a name prefix, once, for
// setups that only know the names (the emulators, LocalStack).
//
// Retries and the dead-letter queue are the queue's own settings (its
// visibility timeout and redrive policy), not this package's: a message a
// worker fails stays on the queue and comes back, and after the redrive
// policy's maxReceiveCount SQS moves it to the dead-letter queue.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/queue"
)

// MaxVisibility is the longest a received message can be hidden (SQS's
// limit for ChangeMessageVisibility); longer retry delays are cut to it.
const MaxVisibility = 12 * time.Hour

// Queue sends to and receives from SQS queues by their names.
type Queue struct {
	client *sqs.Client
	urls   map[string]string
}

var _ queue.PartialBatchSender = (*Queue)(nil)

// NewClient loads the default AWS configuration (so AWS_ENDPOINT_URL_SQS or
// AWS_ENDPOINT_URL can point it at an emulator or LocalStack) and returns
// an SQS client.
func NewClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*sqs.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: load AWS config: %w", err)
	}
	return sqs.NewFromConfig(cfg), nil
}

// New returns the queues whose URLs urls maps by name. It copies urls.
func New(client *sqs.Client, urls map[string]string) *Queue {
	m := make(map[string]string, len(urls))
	for name, u := range urls {
		m[name] = u
	}
	return &Queue{client: client, urls: m}
}

// Resolve looks up the URL of the queue prefix+name for each name, once,
// with GetQueueUrl.
func Resolve(ctx context.Context, client *sqs.Client, prefix string, names ...string) (map[string]string, error) {
	urls := make(map[string]string, len(names))
	for _, name := range names {
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(prefix + name)})
		if err != nil {
			return nil, fmt.Errorf("sqsqueue: URL of queue %s%s: %w", prefix, name, err)
		}
		urls[name] = aws.ToString(out.QueueUrl)
	}
	return urls, nil
}

// URL returns the URL of the named queue.
func (q *Queue) URL(name string) (string, error) {
	u, ok := q.urls[name]
	if !ok {
		return "", fmt.Errorf("sqsqueue: no URL configured for queue %q", name)
	}
	return u, nil
}

// delaySeconds rounds a delay up to whole seconds, so that a retry never
// comes early, within [0, limit].
func delaySeconds(d, limit time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	d = min(d, limit)
	return int32(math.Ceil(d.Seconds()))
}

// checkBody refuses what SQS refuses in a message body: SQS bodies are
// UTF-8 text of the characters #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to
// #xFFFD and #x10000 to #x10FFFF (API reference, SendMessage). JSON may
// carry U+FFFE or U+FFFF unescaped; checked here, such a body fails alone
// rather than the whole SendMessageBatch it would be part of.
func checkBody(name string, body []byte) error {
	if !utf8.Valid(body) {
		return fmt.Errorf("sqsqueue: send to %s: body is not UTF-8", name)
	}
	for i, r := range string(body) {
		ok := r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000
		if !ok {
			return fmt.Errorf("sqsqueue: send to %s: body has the character %U at byte %d, which SQS refuses", name, r, i)
		}
	}
	return nil
}

// Send enqueues body on the named queue, visible after delay (rounded up to
// whole seconds, at most queue.MaxDelay). SQS bodies are text: body must be
// UTF-8 of the characters SQS takes (checkBody), which every message of the
// service (JSON) is but for U+FFFE and U+FFFF.
func (q *Queue) Send(ctx context.Context, name string, body []byte, delay time.Duration) error {
	u, err := q.URL(name)
	if err != nil {
		return err
	}
	if err := checkBody(name, body); err != nil {
		return err
	}
	_, err = q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(u),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: delaySeconds(delay, queue.MaxDelay),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue: send to %s: %w", name, err)
	}
	return nil
}

// SQS's limits on one SendMessageBatch (API reference, SendMessageBatch:
// "send up to 10 messages"; "the maximum allowed individual message size
// and the maximum total payload size (the sum of the individual lengths of
// all of the batched messages) are both 256 KiB (262,144 bytes)", raised
// to 1 MiB in 2025: a call within 256 KiB is accepted under either).
const (
	batchEntries = 10
	batchBytes   = 256 << 10
)

// sendAttempts bounds the calls SendEach makes for an entry SQS failed on
// its side (SenderFault false), the first included; retryPause is the
// wait before each retry, doubling.
const (
	sendAttempts = 3
	retryPause   = 50 * time.Millisecond
)

// SendEach sends msgs with SendMessageBatch: grouped by queue, at most 10
// entries and 256 KiB of bodies a call, one call after another, each
// message with its own delay (as Send's). SQS answers for each entry, and
// a call can succeed while entries fail: an entry SQS failed on its side
// (SenderFault false) is sent again, up to sendAttempts calls in all; the
// others fail with SQS's code and message. It returns one error per
// message, nil for each one sent.
func (q *Queue) SendEach(ctx context.Context, msgs []queue.Outgoing) []error {
	errs := make([]error, len(msgs))
	byQueue := map[string][]int{}
	var names []string
	for i, m := range msgs {
		if _, err := q.URL(m.Queue); err != nil {
			errs[i] = err
			continue
		}
		if err := checkBody(m.Queue, m.Body); err != nil {
			errs[i] = err
			continue
		}
		if byQueue[m.Queue] == nil {
			names = append(names, m.Queue)
		}
		byQueue[m.Queue] = append(byQueue[m.Queue], i)
	}
	for _, name := range names {
		for _, call := range batches(msgs, byQueue[name]) {
			q.sendBatch(ctx, name, msgs, call, errs)
		}
	}
	return errs
}

// batches cuts the messages at idx (of one queue) into calls within SQS's
// limits; a body over the byte limit goes alone, for SQS to refuse.
func batches(msgs []queue.Outgoing, idx []int) [][]int {
	var out [][]int
	var cur []int
	size := 0
	for _, i := range idx {
		n := len(msgs[i].Body)
		if len(cur) == batchEntries || (len(cur) > 0 && size+n > batchBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sendBatch sends the messages at idx to the named queue in one call,
// and again those SQS failed on its side, and records each one's outcome
// in errs. An entry's id is its index in msgs.
func (q *Queue) sendBatch(ctx context.Context, name string, msgs []queue.Outgoing, idx []int, errs []error) {
	u, _ := q.URL(name) // SendEach checked it
	pause := retryPause
	for attempt := 1; len(idx) > 0; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, len(idx))
		for k, i := range idx {
			entries[k] = types.SendMessageBatchRequestEntry{
				Id:           aws.String(strconv.Itoa(i)),
				MessageBody:  aws.String(string(msgs[i].Body)),
				DelaySeconds: delaySeconds(msgs[i].Delay, queue.MaxDelay),
			}
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(u), Entries: entries})
		if err != nil {
			for _, i := range idx {
				errs[i] = fmt.Errorf("sqsqueue: send to %s: %w", name, err)
			}
			return
		}
		answered := map[string]bool{}
		for _, s := range out.Successful {
			id := aws.ToString(s.Id)
			if i, err := strconv.Atoi(id); err == nil && slices.Contains(idx, i) {
				answered[id], errs[i] = true, nil
			}
		}
		var again []int
		for _, f := range out.Failed {
			id := aws.ToString(f.Id)
			i, err := strconv.Atoi(id)
			if err != nil || answered[id] || !slices.Contains(idx, i) {
				continue // not an entry of this call
			}
			answered[id] = true
			errs[i] = fmt.Errorf("sqsqueue: send to %s: message %d: %s: %s", name, i, aws.ToString(f.Code), aws.ToString(f.Message))
			if !f.SenderFault && attempt < sendAttempts {
				again = append(again, i)
			}
		}
		for _, i := range idx {
			if !answered[strconv.Itoa(i)] {
				errs[i] = fmt.Errorf("sqsqueue: send to %s: message %d: SQS answered neither sent nor failed", name, i)
			}
		}
		if len(again) > 0 {
			select {
			case <-ctx.Done():
				return // the entries keep their failures
			case <-time.After(pause):
			}
			pause *= 2
		}
		idx = again
	}
}

// Delivery is a received message and the handle that deletes it or
// changes its visibility.
type Delivery struct {
	queue.Message
	ReceiptHandle string
}

// Receive takes up to n (at most 10) visible messages of the named queue,
// waiting up to wait for the first (long polling; zero returns at once).
// They stay hidden for the queue's visibility timeout. (The emulator of
// the tests holds a long poll open for the whole wait, collecting messages
// as they become visible, so its callers poll with a wait of zero.)
func (q *Queue) Receive(ctx context.Context, name string, n int, wait time.Duration) ([]Delivery, error) {
	u, err := q.URL(name)
	if err != nil {
		return nil, err
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(u),
		MaxNumberOfMessages:         int32(min(max(n, 1), 10)),
		WaitTimeSeconds:             delaySeconds(wait, 20*time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		// The deprecated spelling too: the emulator reads only this one.
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeName(types.MessageSystemAttributeNameApproximateReceiveCount)},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: receive from %s: %w", name, err)
	}
	ds := make([]Delivery, len(out.Messages))
	for i, m := range out.Messages {
		ds[i] = Delivery{
			Message: queue.Message{ID: aws.ToString(m.MessageId), Queue: name, Body: []byte(aws.ToString(m.Body)),
				Receives: Receives(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])},
			ReceiptHandle: aws.ToString(m.ReceiptHandle),
		}
	}
	return ds, nil
}

// Receives reads SQS's ApproximateReceiveCount attribute; 1 when it is
// missing or unreadable.
func Receives(attr string) int {
	n, err := strconv.Atoi(attr)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Delete removes a handled message.
func (q *Queue) Delete(ctx context.Context, name, receiptHandle string) error {
	u, err := q.URL(name)
	if err != nil {
		return err
	}
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(u), ReceiptHandle: aws.String(receiptHandle)}); err != nil {
		return fmt.Errorf("sqsqueue: delete from %s: %w", name, err)
	}
	return nil
}

// ChangeVisibility hides a received message for d from now (rounded up to
// whole seconds, at most MaxVisibility): a failed message comes back then,
// instead of after the queue's visibility timeout.
func (q *Queue) ChangeVisibility(ctx context.Context, name, receiptHandle string, d time.Duration) error {
	u, err := q.URL(name)
	if err != nil {
		return err
	}
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(u), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: delaySeconds(d, MaxVisibility)})
	if err != nil {
		return fmt.Errorf("sqsqueue: change visibility on %s: %w", name, err)
	}
	return nil
}

// Work receives up to n messages of the named queue once, waiting up to
// wait, and handles them in order as the worker Lambda does: a handled
// message is deleted; a failed one stays for a retry after the delay its
// error asks for (queue.DelayOf) or else the queue's visibility timeout.
// It returns how many messages it received; an error means the queue
// could not be reached, never that a handler failed.
func (q *Queue) Work(ctx context.Context, name string, n int, wait time.Duration, h queue.Handler) (int, error) {
	ds, err := q.Receive(ctx, name, n, wait)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, d := range ds {
		herr := h(ctx, d.Message)
		if herr == nil {
			errs = append(errs, q.Delete(ctx, name, d.ReceiptHandle))
			continue
		}
		if delay, ok := queue.DelayOf(herr); ok {
			errs = append(errs, q.ChangeVisibility(ctx, name, d.ReceiptHandle, delay))
		}
	}
	return len(ds), errors.Join(errs...)
}
