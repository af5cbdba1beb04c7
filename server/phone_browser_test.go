package server

import "testing"

// menusOffScreenJS opens each menu of the stage in turn (every broker's
// and every link's <details>) and lists those whose open menu reaches past
// the screen's left or right edge, or makes the page scroll sideways, as
// "node-3: 212..410 of 360".
const menusOffScreenJS = `(() => {
  const bad = [], w = document.documentElement.clientWidth;
  for (const d of document.querySelectorAll('#topo details')) {
    d.open = true;
    const r = d.querySelector('.menu').getBoundingClientRect(), sw = document.documentElement.scrollWidth;
    if (r.left < 0 || r.right > w || sw > w) bad.push(d.dataset.testid + ": " + Math.round(r.left) + ".." + Math.round(r.right) + " of " + w + " (scroll width " + sw + ")");
    d.open = false;
  }
  return bad;
})()`

// TestBrowserMenusFitAPhone: at 360 px (TestPagesFitAPhone checks every
// page declares a device-width viewport) the stage's menus, opened one by
// one, stay on the screen: a broker's menu under the rightmost broker
// reached ~50 px past its right edge.
func TestBrowserMenusFitAPhone(t *testing.T) {
	b := startBrowserLab(t, true)
	b.viewport(360, 740, true)
	b.open("/", true)
	b.poll(`document.querySelectorAll('#topo details.node.broker').length === 3 && document.querySelector('#topo.placed') !== null`, "the stage's three brokers placed")
	n := eval[int](b, `document.querySelectorAll('#topo details').length`)
	if bad := eval[[]string](b, menusOffScreenJS); len(bad) > 0 {
		b.shotOf("#topo", "menus-360px")
		t.Errorf("menus past the screen's edge at 360 px (%d menus): %q", n, bad)
	}
	b.click(`[data-testid="node-3"] > summary`)
	b.shotOf("#topo", "menus-360px-broker-3")
	b.click(`[data-testid="node-3"] > summary`)
	b.viewport(1366, 768, false) // and on a laptop, where they had room
	if bad := eval[[]string](b, menusOffScreenJS); len(bad) > 0 {
		t.Errorf("menus past the screen's edge at 1366 px: %q", bad)
	}

	// Without JavaScript the nodes are listed, not placed; their menus fit too.
	b.viewport(360, 740, true)
	b.noScripts()
	b.open("/", false)
	if n := eval[int](b, `document.querySelectorAll('#topo:not(.placed) details.node.broker').length`); n != 3 {
		t.Fatalf("without JavaScript: %d broker menus listed, want 3", n)
	}
	eval[bool](b, `document.querySelector('[data-testid="node-3"]').open = true`)
	b.shotOf("#topo", "menus-360px-broker-3-nojs")
	if bad := eval[[]string](b, menusOffScreenJS); len(bad) > 0 {
		b.shotOf("#topo", "menus-360px-nojs") // shot awaits a frame, which a page without scripts never draws
		t.Errorf("without JavaScript, menus past the screen's edge at 360 px: %q", bad)
	}
}
