"""Jupyter server extensions (run in the server process, not the kernel): kernel websockets without Nagle's delay; a clean stop on SIGINT; the live view's direct channel."""
