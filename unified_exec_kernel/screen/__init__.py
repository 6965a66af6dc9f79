"""Terminal text as a person reads it: what the screen would show (pyte), colours kept. No Jupyter; shared by every face."""
