"""The standalone engine: runs of the C++ core (``standalone``: lmbench, STREAM, traffic, loaded latency,
traces, many hosts), MLC's traffic modes, latency histograms, request traces and progress on stderr."""
