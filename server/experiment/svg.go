package experiment

import (
	"fmt"
	"html"
	"math"
	"strings"

	"tidemark/lessons"
)

// barColors are the bars' fills, one per value of the plot's "per"
// dimension (repeated past the last).
var barColors = []string{"#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f", "#c53030"}

// plotSVG draws p as a bar chart: a group per value of p.By, a bar per
// value of p.Per (one bar without), each the mean of p.Measure over the
// finished runs it selects, its value written above it.
func (r *Results) plotSVG(p lessons.ExpPlot) []byte {
	groups := r.dimValues(p.By)
	series := []string{""}
	if p.Per != "" {
		series = r.dimValues(p.Per)
	}
	vals := make([][]float64, len(groups))
	have := make([][]bool, len(groups))
	top := 0.0
	for i, g := range groups {
		vals[i], have[i] = make([]float64, len(series)), make([]bool, len(series))
		for j, s := range series {
			args := []string{p.By + "=" + g}
			if s != "" {
				args = append(args, p.Per+"="+s)
			}
			runs := r.selected(lessons.Query{Name: p.Measure, Args: args})
			if len(runs) > 0 {
				vals[i][j], have[i][j] = mean(runs, p.Measure), true
				top = math.Max(top, vals[i][j])
			}
		}
	}
	if top <= 0 {
		top = 1
	}
	const (
		w, h            = 640, 360
		left, right     = 60, 20
		topPad, bottomP = 40, 60
	)
	plotW, plotH := float64(w-left-right), float64(h-topPad-bottomP)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	title := p.Measure + " by " + p.By
	if p.Per != "" {
		title += " per " + p.Per
	}
	fmt.Fprintf(&b, `<title>%s</title><rect width="100%%" height="100%%" fill="#fff"/>`+"\n", esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc(title))
	// axes and 4 grid lines
	for k := 0; k <= 4; k++ {
		y := float64(topPad) + plotH - plotH*float64(k)/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, esc(num(top*float64(k)/4)))
	}
	groupW := plotW / float64(max(len(groups), 1))
	barW := groupW * 0.8 / float64(len(series))
	for i, g := range groups {
		x0 := float64(left) + groupW*float64(i) + groupW*0.1
		for j := range series {
			if !have[i][j] {
				continue
			}
			bh := plotH * vals[i][j] / top
			x := x0 + barW*float64(j)
			y := float64(topPad) + plotH - bh
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, y, barW*0.9, bh, barColors[j%len(barColors)])
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", x+barW*0.45, y-3, esc(num(vals[i][j])))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x0+groupW*0.4, h-bottomP+16, esc(g))
	}
	if p.Per != "" {
		x := float64(left)
		for j, s := range series {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="10" height="10" fill="%s"/><text x="%.1f" y="%d">%s</text>`, x, h-22, barColors[j%len(barColors)], x+14, h-13, esc(p.Per+" "+s))
			x += 20 + 7*float64(len(p.Per)+len(s)+1)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, topPad+int(plotH), w-right, topPad+int(plotH))
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func esc(s string) string { return html.EscapeString(s) }
