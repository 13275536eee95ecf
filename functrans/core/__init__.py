"""The core: abstract values, the IR, tracing, evaluation, checking and printing."""
