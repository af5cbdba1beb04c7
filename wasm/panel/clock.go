package panel

// Rates are the lab clock's rates the stage offers (lab seconds per real
// second), slowest first.
var Rates = []float64{0.25, 1, 4}

// RateValue is rate as a form sends it ("0.25", "1", "4"); "" for a rate
// the stage does not offer.
func RateValue(rate float64) string {
	switch rate {
	case 0.25:
		return "0.25"
	case 1:
		return "1"
	case 4:
		return "4"
	}
	return ""
}

// RateLabel is rate as the stage shows it (¼×, 1×, 4×).
func RateLabel(c Catalog, rate float64) string {
	switch rate {
	case 0.25:
		return c.T("stage.speed.quarter")
	case 4:
		return c.T("stage.speed.four")
	}
	return c.T("stage.speed.one")
}

// ClockStateText says what the lab clock does: paused or running, and at
// which rate ("Clock paused · ¼×").
func ClockStateText(c Catalog, paused bool, rate float64) string {
	state := c.T("stage.clock.running")
	if paused {
		state = c.T("stage.clock.paused")
	}
	return c.T("stage.clock.state", state, RateLabel(c, rate))
}
