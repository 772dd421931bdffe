"""What an operator or a monitor reads: the home page, /healthz, /metrics."""
