"""The ``ttc`` command line: its commands (``main``), their output, exit codes and progress."""
