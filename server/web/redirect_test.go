package web

import "testing"

// TestLocalPathStaysOnSite: the next= of /ui/lang and /ui/action can only
// name a path on this site (issue 10: "/%09/evil.example" redirected away).
func TestLocalPathStaysOnSite(t *testing.T) {
	for next, want := range map[string]string{
		"/topics/demo?x=1#p": "/topics/demo?x=1#p",
		"/lessons":           "/lessons",
		"":                   "/",
		"//evil.example":     "/",
		"/\t/evil.example":   "/",
		"/\n/evil.example":   "/",
		"/\\evil.example":    "/",
		"/ /evil.example":    "/",
		"https://evil":       "/",
		"evil.example":       "/",
		"/\x00":              "/",
		"/\u3000/evil":       "/",
	} {
		if got := localPath(next); got != want {
			t.Errorf("localPath(%q) = %q, want %q", next, got, want)
		}
	}
}
