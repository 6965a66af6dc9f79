"""The live face: a session as a terminal in the page (the anywidget `TerminalWidget`), the kernel comm target, and the front end's built assets."""
