package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"tidemark/server/class"
	"tidemark/server/web"
)

// TestTeacherTokensRevoked: after two starts both teacher links are valid;
// the teacher lists them (by id, the current one marked, never the token)
// and revokes the first start's, which is refused from then on while the
// other keeps working; an unknown id is 404 and a seat cannot list them.
// Before, every earlier teacher token stayed valid with no way to end it.
func TestTeacherTokensRevoked(t *testing.T) {
	dir := t.TempDir()
	l, stop := startClass(t, dir, "--seats", "1")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l2, _ := startClass(t, dir)
	old, cur := class.TeacherTokenID(l.teacher), class.TeacherTokenID(l2.teacher)

	status, body := l2.call(t, "GET", "/api/v1/class/teacher-tokens", l2.teacher, "")
	var list web.TeacherTokensResponse
	if status != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Tokens) != 2 ||
		list.Tokens[0].ID != old || list.Tokens[0].Current || list.Tokens[1].ID != cur || !list.Tokens[1].Current ||
		list.Tokens[1].Created == nil {
		t.Fatalf("list: %d %s (want %s then %s, current)", status, body, old, cur)
	}
	if status, _ := l2.call(t, "GET", "/api/v1/class", l.teacher, ""); status != http.StatusOK {
		t.Fatalf("the first start's teacher token before revoking: %d", status)
	}
	if status, body := l2.call(t, "DELETE", "/api/v1/class/teacher-tokens/"+old, l2.teacher, ""); status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", status, body)
	}
	if status, _ := l2.call(t, "GET", "/api/v1/class", l.teacher, ""); status != http.StatusUnauthorized {
		t.Fatalf("a revoked teacher token: %d, want 401", status)
	}
	if status, _ := l2.call(t, "GET", "/api/v1/class", l2.teacher, ""); status != http.StatusOK {
		t.Fatalf("the other teacher token after the revocation: %d", status)
	}
	if status, _ := l2.call(t, "DELETE", "/api/v1/class/teacher-tokens/"+old, l2.teacher, ""); status != http.StatusNotFound {
		t.Fatalf("revoking it again: %d, want 404", status)
	}
	seat := l2.join(t, 1, "Ada")
	if status, _ := l2.call(t, "GET", "/api/v1/class/teacher-tokens", seat, ""); status != http.StatusForbidden {
		t.Fatalf("a seat listing teacher tokens: %d, want 403", status)
	}
}
