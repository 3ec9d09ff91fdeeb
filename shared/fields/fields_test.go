package fields

import (
	"strings"
	"testing"
)

func TestRules(t *testing.T) {
	cases := []struct {
		body string
		read func(o *Object)
		want string // substring of the error, "" for none
	}{
		{`{}`, func(o *Object) { o.String("name", Required, StringRule{Max: 3}) }, "name: is required"},
		{`{"name":null}`, func(o *Object) { o.String("name", Required, StringRule{}) }, "name: must not be null"},
		{`{"name":null}`, func(o *Object) { o.StringPtr("name", OptionalNullable, StringRule{}) }, ""},
		{`{"name":"abcd"}`, func(o *Object) { o.String("name", Required, StringRule{Max: 3}) }, "at most 3 characters"},
		{`{"name":"äbc"}`, func(o *Object) { o.String("name", Required, StringRule{Max: 3}) }, ""},
		{`{"name":"äbc"}`, func(o *Object) { o.String("name", Required, StringRule{Max: 3, MaxBytes: 3}) }, "at most 3 bytes"},
		{`{"name":""}`, func(o *Object) { o.String("name", Required, StringRule{Min: 1}) }, "must not be empty"},
		{`{"name":"a\nb"}`, func(o *Object) { o.String("name", Required, StringRule{SingleLine: true}) }, "single line"},
		{`{"name":"a,b"}`, func(o *Object) { o.String("name", Required, StringRule{NoComma: true}) }, "comma"},
		{`{"name":5}`, func(o *Object) { o.String("name", Required, StringRule{}) }, "must be a string"},
		{`{"n":3.0}`, func(o *Object) { o.Int("n", Required, 0, 10) }, ""},
		{`{"n":3.5}`, func(o *Object) { o.Int("n", Required, 0, 10) }, "must be an integer"},
		{`{"n":11}`, func(o *Object) { o.Int("n", Required, 0, 10) }, "from 0 to 10"},
		{`{"n":-1}`, func(o *Object) { o.Int("n", Required, 0, 10) }, "from 0 to 10"},
		{`{"n":"1"}`, func(o *Object) { o.Int("n", Required, 0, 10) }, "must be an integer"},
		{`{"n":1e400}`, func(o *Object) { o.Int("n", Required, 0, 10) }, "must be an integer"},
		{`{"l":["a","a"]}`, func(o *Object) { o.Strings("l", Required, ListRule{Unique: true}) }, `l: must not repeat "a"`},
		{`{"l":["a","b","c"]}`, func(o *Object) { o.Strings("l", Required, ListRule{Max: 2}) }, "at most 2 items"},
		{`{"l":["a",""]}`, func(o *Object) { o.Strings("l", Required, ListRule{Item: StringRule{Min: 1}}) }, "l[1]: must not be empty"},
		{`{"u":["ftp://x"]}`, func(o *Object) { o.Strings("u", Required, ListRule{Item: StringRule{URI: true}}) }, "u[0]: must be an absolute http"},
		{`{"x":1}`, func(o *Object) {}, "x: unknown property"},
		{`{"m":{"a":"b,c"}}`, func(o *Object) { o.StringMap("m", Required, 8, StringRule{}, StringRule{NoComma: true}) }, `m: value of "a" must not contain a comma`},
		{`{"m":{"a":["x","x"]}}`, func(o *Object) { o.StringListMap("m", Required, 8, StringRule{}, ListRule{Unique: true}) }, `must not repeat "x"`},
		{`{"v":[{"p":-1}]}`, func(o *Object) {
			for _, c := range o.Objects("v", Required, 10) {
				c.Int("p", Required, 0, 5)
				o.Child(c)
			}
		}, "v[0].p: must be from 0 to 5"},
	}
	for _, tc := range cases {
		o, err := Parse([]byte(tc.body), "")
		if err != nil {
			t.Fatal(err)
		}
		tc.read(o)
		err = o.Err()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected %v", tc.body, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.body, err, tc.want)
		}
	}
}
