package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// MaxItemBytes is the largest item either store writes: DynamoDB's item
// limit, 400 KB, counted as DynamoDB counts it (ItemSize). Both adapters
// refuse a larger item before writing, with an *ItemTooLargeError, so that
// what the embedded store accepts AWS accepts too.
const MaxItemBytes = 400 << 10

// updateHeadroom is what an OpAdd allows for the numeric attributes the
// item keeps without naming them (counters of a record whose document
// changes): their size is not known before the write.
const updateHeadroom = 1 << 10

// ItemTooLargeError reports an item past MaxItemBytes.
type ItemTooLargeError struct {
	Key   Key
	Size  int
	Limit int
}

func (e *ItemTooLargeError) Error() string {
	return fmt.Sprintf("store: item %s/%s would be %d bytes; the limit is %d", e.Key.PK, e.Key.SK, e.Size, e.Limit)
}

// ItemSize is the size DynamoDB counts for an item in the layout of the
// port (see the dynamodb adapter): each attribute's name in UTF-8 bytes
// plus its value (strings in UTF-8 bytes, the binary document in bytes, a
// number one byte per two significant digits plus one).
func ItemSize(it Item) int {
	n := len("pk") + len(it.PK) + len("sk") + len(it.SK) + len("v") + numberSize(it.Version)
	if len(it.Data) > 0 {
		n += len("d") + len(it.Data)
	}
	if it.ExpiresAt != 0 {
		n += len("ttl") + numberSize(it.ExpiresAt)
	}
	for name, v := range it.Nums {
		n += len(name) + numberSize(v)
	}
	return n
}

// numberSize is DynamoDB's size of a number: leading and trailing zeros
// trimmed, one byte per two significant digits, plus one.
func numberSize(v int64) int {
	s := strconv.FormatInt(v, 10)
	if s[0] == '-' {
		s = s[1:]
	}
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return (len(s)+1)/2 + 1
}

// opSize is the most an operation can make its item weigh.
func opSize(op Op) int {
	switch op.Kind {
	case OpPut:
		return ItemSize(op.Item)
	case OpAdd:
		n := ItemSize(op.Item) + updateHeadroom
		for name := range op.Deltas {
			n += len(name) + numberSize(-1<<63)
		}
		return n
	}
	return 0
}

// Marshal encodes a stored document: json.Marshal without the HTML
// escapes (a stored document is never HTML; escaping made each <, > and &
// six bytes, enough to push a valid record past MaxItemBytes).
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
