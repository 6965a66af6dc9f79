"""A program in a pseudo-terminal: spawning it, its terminal's I/O, its exit, and ending every process it started (also after a hard death of the kernel: the guardian)."""
