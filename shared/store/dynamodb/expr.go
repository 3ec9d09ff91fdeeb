package dynamodb

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/moku/sellerapi/shared/store"
)

// expr collects the placeholders of one request's expressions; every name
// goes through a placeholder, so reserved words never matter.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder of an attribute name (valid names are
// [a-z][a-z0-9_]*, so "#"+name is a valid placeholder).
func (e *expr) name(n string) string {
	ph := "#" + n
	e.names[ph] = n
	return ph
}

func (e *expr) value(v types.AttributeValue) string {
	ph := ":v" + strconv.Itoa(len(e.values))
	e.values[ph] = v
	return ph
}

func (e *expr) namesOrNil() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// absent holds when no live item has the key.
func (e *expr) absent(now int64) string {
	return "(attribute_not_exists(" + e.name("pk") + ") OR " + e.name("ttl") + " <= " + e.value(num(now)) + ")"
}

// exists holds when a live item has the key.
func (e *expr) exists(now int64) string {
	ttl := e.name("ttl")
	return "(attribute_exists(" + e.name("pk") + ") AND (attribute_not_exists(" + ttl + ") OR " + ttl + " > " + e.value(num(now)) + "))"
}

// notExpired holds when the key is absent or its item is live; it is the
// precondition of an ADD that may create the item.
func (e *expr) notExpired(now int64) string {
	ttl := e.name("ttl")
	return "(attribute_not_exists(" + ttl + ") OR " + ttl + " > " + e.value(num(now)) + ")"
}

var cmps = map[store.Cmp]bool{store.LT: true, store.LE: true, store.GE: true, store.GT: true, store.EQ: true}

// bound translates a bound, counting a missing attribute as zero: whether
// zero satisfies it is known here, so a missing attribute either passes or
// fails outright.
func (e *expr) bound(b store.Bound) string {
	if !cmps[b.Cmp] {
		// Never holds, as in the embedded store (Bounds imply the item
		// exists, so this contradicts them).
		return "attribute_not_exists(" + e.name("pk") + ")"
	}
	a := e.name(b.Attr)
	c := a + " " + string(b.Cmp) + " " + e.value(num(b.Value))
	if b.Holds(0) {
		return "(attribute_not_exists(" + a + ") OR " + c + ")"
	}
	return c
}

func needsLive(c store.Cond) bool { return c.Exists || c.HasVersion || len(c.Bounds) > 0 }

// cond translates a condition; "" when it always holds.
func (e *expr) cond(c store.Cond, now int64) string {
	var parts []string
	if c.Absent {
		parts = append(parts, e.absent(now))
	}
	if needsLive(c) {
		parts = append(parts, e.exists(now))
	}
	if c.HasVersion {
		parts = append(parts, e.name("v")+" = "+e.value(num(c.Version)))
	}
	for _, b := range c.Bounds {
		parts = append(parts, e.bound(b))
	}
	return strings.Join(parts, " AND ")
}
