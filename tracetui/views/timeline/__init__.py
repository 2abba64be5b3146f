"""The timeline: lanes of a trace over any time range (the view model; the widget draws it)."""
