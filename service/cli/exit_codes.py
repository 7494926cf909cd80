"""The ``ttc`` exit codes (DESIGN.md §7 *CLI*), in a module of their own so every command module
can name them without importing the others."""

EXIT_OK = 0
EXIT_INTERNAL = 1  # a bug or an unexpected failure: the message says what
EXIT_BAD_INPUT = 2  # a bad spec, config or argument; a 422 from a service
EXIT_UNREACHABLE = 3  # the target is not reachable within the budget
EXIT_SERVICE = 4  # the service is unreachable or refused the call (connection failed, 401, 5xx)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): a local run stopped and its study cancelled

INTERRUPTED = "interrupted (Ctrl-C) in the process that ran it"  # why such a study ended
