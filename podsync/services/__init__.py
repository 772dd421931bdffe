"""Domain rules of podsync. No HTTP and no Click: the web handlers and the CLI
both call these."""
