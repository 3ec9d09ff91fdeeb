package resources

import "testing"

func TestStageNames(t *testing.T) {
	for _, ok := range []string{"prod", "local", "dev-2", "a", "pr-123-feature"} {
		if _, err := For(ok); err != nil {
			t.Errorf("For(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Prod", "dev_2", "-dev", "dev-", "dev--2", "2dev", "a-stage-that-is-too-long"} {
		if _, err := For(bad); err == nil {
			t.Errorf("For(%q) accepted", bad)
		}
	}
}

func TestNames(t *testing.T) {
	n, _ := For("prod")
	for _, c := range []struct{ got, want string }{
		{n.Stack(), "sellerapi-prod"},
		{n.Table(), "sellerapi-prod"},
		{n.Function("vendors"), "sellerapi-prod-vendors"},
		{n.LogGroup("admin"), "/aws/lambda/sellerapi-prod-admin"},
		{n.MediaBucket("123456789012", "eu-west-1"), "sellerapi-prod-media-123456789012-eu-west-1"},
		{n.DeadLetterQueue("webhook-worker"), "sellerapi-prod-webhook-worker-dlq"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The longest stage and region still give a valid S3 bucket name.
func TestLongestBucketNameFitsS3(t *testing.T) {
	n, err := For("abcdefghijklmnop"[:MaxStageLen])
	if err != nil {
		t.Fatal(err)
	}
	if b := n.MediaBucket("123456789012", "ap-southeast-5"); len(b) > 63 {
		t.Errorf("bucket %q has %d characters, S3 allows 63", b, len(b))
	}
}
