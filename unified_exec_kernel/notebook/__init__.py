"""The notebook face: the magics, a cell's run and its one display, the cell rewrite that makes them cooperative, the sessions table."""
