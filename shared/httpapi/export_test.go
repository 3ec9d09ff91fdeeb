package httpapi

// ViewerAddr is viewerAddr for the tests: the address read, or "".
func ViewerAddr(v string) string {
	a, ok := viewerAddr(v)
	if !ok {
		return ""
	}
	return a.String()
}
