"""Output as bytes: UTF-8 boundaries, the bounded buffers, what a request keeps of a flood, truncation, and batching for faces."""
