package views

import (
	"context"
	"html"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/wasm/panel"
)

// Page is what every page tells the layout: its title (already translated),
// the learner's language, the page's own path (where the language switch and
// the control forms return to) and the outcome of the last control, if any.
type Page struct {
	Title string
	Lang  i18n.Lang // the zero Lang renders English
	Path  string    // e.g. "/topics/demo/partitions/0"; "/" when empty
	Flash *Flash    // nil: no message
	// Observe names the Kafka cluster shown in observe mode (its bootstrap
	// addresses); "" for the lab. Observed pages hide every control.
	Observe string
	// Recent is the bus's recent history, oldest first: the live panel's
	// event list starts with it instead of empty (nil: it starts empty).
	Recent []events.Event
	// ReplayAfter, on a lesson's page, is the Seq after which the stream
	// plays the shown step back: the list's events after it are marked
	// "replayed" (0: none).
	ReplayAfter uint64
	// Charts is the stage's charts as the server draws them (GET
	// /ui/charts), so the overview opens with the last minute charted.
	Charts string
}

// Flash is the outcome of a control a learner just used: OK or not, and the
// text to show (already translated; Kafka error names stay as they are).
type Flash struct {
	OK   bool
	Text string
}

func (p Page) lang() i18n.Lang {
	if !p.Lang.Valid() {
		return i18n.Default
	}
	return p.Lang
}

func (p Page) path() string {
	if p.Path == "" {
		return "/"
	}
	return p.Path
}

// t translates key into the page's language.
func (p Page) t(key string, args ...any) string { return i18n.T(p.lang(), key, args...) }

// refLinks links each lesson of refs in running text, apart by the
// language's separator (", ", "、"). Written here rather than in a templ
// loop, which puts a space around each link.
func (p Page) refLinks(refs []LessonRef) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		for i, r := range refs {
			if i > 0 {
				b.WriteString(html.EscapeString(p.t("ui.list.sep")))
			}
			b.WriteString(`<a href="#lesson-` + html.EscapeString(r.ID) + `">` + html.EscapeString(r.Name) + `</a>`)
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// label is key's text as a label before what it names, with the language's
// colon ("Controller: ", "控制器："), not an ASCII colon after Chinese.
func (p Page) label(key string) string { return p.t("ui.label", p.t(key)) }

// langURL is the language switch's link for l: it sets the cookie and comes
// back to this page.
func (p Page) langURL(l i18n.Lang) string {
	return "/ui/lang?set=" + url.QueryEscape(string(l)) + "&next=" + url.QueryEscape(p.path())
}

// PanelCatalog returns the strings the WASM panel needs in lang, for the
// page to embed as JSON: the "panel." and "stage." keys, and the event
// messages' "event." keys with Kafka's "errors." descriptions they quote.
func PanelCatalog(lang i18n.Lang) map[string]string {
	out := map[string]string{}
	for k, v := range i18n.Catalog(lang) {
		if strings.HasPrefix(k, "panel.") || strings.HasPrefix(k, "stage.") ||
			strings.HasPrefix(k, "event.") || strings.HasPrefix(k, "errors.") {
			out[k] = v
		}
	}
	return out
}

// message renders an event message (its English text, key and args) in
// the page's language.
func (p Page) message(english, key string, args []string) string {
	return i18n.Message(p.lang(), english, key, args)
}

// ClassRole is who a request is in class mode; the zero role is no class.
type ClassRole int

// The roles of class mode.
const (
	NoClass ClassRole = iota
	Learner           // a seat's token
	Teacher           // the teacher's token
)

type classRoleKey struct{}

// WithClassRole returns ctx carrying role: the layout then links the
// learner's exercises or the teacher's dashboard.
func WithClassRole(ctx context.Context, role ClassRole) context.Context {
	return context.WithValue(ctx, classRoleKey{}, role)
}

// classRole returns the role ctx carries (NoClass when none).
func classRole(ctx context.Context) ClassRole {
	r, _ := ctx.Value(classRoleKey{}).(ClassRole)
	return r
}

// bodyClass marks observe mode for the stylesheet, which hides the
// controls the live panel draws (its fault menus, the time controls).
func (p Page) bodyClass() string {
	if p.Observe != "" {
		return "observe"
	}
	return ""
}

// recentEvents returns the list items of p.Recent as the panel draws them
// (the same markup, in the page's language), newest first.
func (p Page) recentEvents() string {
	s := panel.NewState()
	for _, e := range p.Recent {
		if !e.Kind.Unlisted() {
			s.Recent = append(s.Recent, e)
		}
	}
	s.Recent = s.Recent[max(0, len(s.Recent)-panel.MaxRecent):]
	list := s.RenderEvents(^uint64(0), 0, panel.Catalog(PanelCatalog(p.lang())))
	if p.ReplayAfter == 0 {
		return list
	}
	// The events the stream plays back are marked, and hidden once the
	// panel is live (app.css): the playback lists them in their turn.
	return listedSeq.ReplaceAllStringFunc(list, func(li string) string {
		m := listedSeq.FindStringSubmatch(li)
		if seq, err := strconv.ParseUint(m[2], 10, 64); err == nil && seq > p.ReplayAfter {
			return `<li class="replayed ` + m[1] + `" data-seq="` + m[2] + `">`
		}
		return li
	})
}

// listedSeq matches an item of the event list (panel.State.RenderEvents):
// its classes and Seq.
var listedSeq = regexp.MustCompile(`<li class="([^"]*)" data-seq="(\d+)">`)
