package fields

import "regexp"

// Patterns of the contract that several groups' fields share.
var (
	// SlugPattern: lowercase letters and digits in hyphen-separated words
	// (product and vendor slugs).
	SlugPattern = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
	// ConnectionIDPattern is the contract's connection id pattern.
	ConnectionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,160}$`)
)

// ConnectionIDRule is the rule of every connection_id a body names.
var ConnectionIDRule = StringRule{Min: 1, Max: 160, Pattern: ConnectionIDPattern, PatternText: "1 to 160 letters, digits, '.', '_', ':' or '-'"}
